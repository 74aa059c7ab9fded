"""Check a built wheel: LICENSE, both py.typed markers, the report's data and the metadata a
package index shows (SPDX license, classifiers, keywords, the console script)."""

import sys
import zipfile

wheel = zipfile.ZipFile(sys.argv[1])
names = set(wheel.namelist())
info = next(n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info"))
metadata = wheel.read(f"{info}/METADATA").decode()
expected = {
    "LICENSE": f"{info}/licenses/LICENSE" in names,
    "topo/py.typed": "topo/py.typed" in names,
    "models/py.typed": "models/py.typed" in names,
    "report data": any(n.startswith("models/present/report/data/") for n in names),
    "License-Expression": "License-Expression: Apache-2.0" in metadata,
    "classifiers": "Classifier: Typing :: Typed" in metadata,
    "keywords": "Keywords:" in metadata,
    "console script": "dgxtopo = " in wheel.read(f"{info}/entry_points.txt").decode(),
}
missing = [what for what, ok in expected.items() if not ok]
if missing:
    raise SystemExit(f"{sys.argv[1]}: the wheel lacks {', '.join(missing)}")
print(f"wheel: {len(names)} files; LICENSE, py.typed and metadata present")
