"""Execute notebooks in place under the CUDA simulator, so the committed outputs are the ones
nbval compares against on CI:  python tools/run_notebook.py book/01_naive.ipynb [...]"""
import os
import sys

import nbformat
from nbclient import NotebookClient

os.environ.setdefault("LAB_DEVICE", "simulator")
for path in sys.argv[1:]:
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=900, kernel_name="python3",
                   resources={"metadata": {"path": os.path.dirname(path) or "."}}).execute()
    nbformat.write(nb, path)
    print(f"executed {path}")
