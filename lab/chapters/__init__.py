"""One package (or module) per chapter: the rows, tables, figures and glued values its notebook
shows, one module per section of the page, the face in its ``__init__``."""
