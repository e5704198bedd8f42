"""What the command line prints and reads: the build summary and the catalog query tool
(``python -m forge.console.query``, what ``make query`` runs)."""
