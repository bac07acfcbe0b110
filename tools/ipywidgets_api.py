"""Records the ipywidgets API of the Python that runs it, for tests/e2e/test_colab.py.

Google Colab ships ipywidgets 7.7 and cannot take 8 without a restart, so the course's panels
must use only what 7.7 has. The test reads what the panels use from helpers/ (without importing
ipywidgets) and compares it with the record this tool made in a throwaway environment:

    python3 -m venv ../ipyw77 && ../ipyw77/bin/pip install ipywidgets==7.7.1
    ../ipyw77/bin/python tools/ipywidgets_api.py tests/ipywidgets_7_7_api.json

The record: every public name of the ipywidgets package, and for each widget class the traits
(the keyword arguments its constructor takes), and the parameters of each public function.
"""

from __future__ import annotations

import inspect
import json
import sys


def record() -> dict:
    import ipywidgets
    names = sorted(n for n in dir(ipywidgets) if not n.startswith("_"))
    classes, functions = {}, {}
    for n in names:
        obj = getattr(ipywidgets, n)
        if inspect.isclass(obj) and issubclass(obj, ipywidgets.Widget):
            classes[n] = sorted(t for t in obj.class_trait_names() if not t.startswith("_"))
        elif inspect.isfunction(obj):
            try:
                functions[n] = list(inspect.signature(obj).parameters)
            except (TypeError, ValueError):
                functions[n] = None
    return {"ipywidgets": ipywidgets.__version__, "python": sys.version.split()[0], "names": names,
            "widget_traits": classes, "function_parameters": functions}


if __name__ == "__main__":
    text = json.dumps(record(), indent=0, sort_keys=True) + "\n"
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
