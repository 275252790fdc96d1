#!/bin/sh
# tests/docs/extract.sh DOC: print the first fenced C or C++ block of the
# page DOC that holds a main function (a chapter's runnable example).
# Fails when the page has none.  Used by tests/Makefile.inc to build each
# client-API chapter's example as a test program.
awk '
/^```(c|c\+\+|cpp)[[:space:]]*$/ { inblock = 1; text = ""; next }
inblock && /^```[[:space:]]*$/ {
    inblock = 0
    if (text ~ /int main\(/) { printf "%s", text; found = 1; exit }
    next
}
inblock { text = text $0 "\n" }
END { if (!found) { print "extract.sh: no fenced block with a main function in " FILENAME > "/dev/stderr"; exit 1 } }
' "${1:?usage: extract.sh DOC}"
