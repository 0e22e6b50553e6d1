"""One module per chapter: the rows, tables, figures and glued values its notebook shows."""
