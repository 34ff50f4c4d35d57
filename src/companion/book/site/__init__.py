"""The web book's build: the Sphinx extension, the execution cache, citations, glossary links, pasted markup, vendored front-end files, the status and changes pages."""
