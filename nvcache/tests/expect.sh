#!/bin/bash
# usage: expect.sh REGEX COMMAND...  -- passes when COMMAND exits 0 and its output matches REGEX.
re=$1; shift
out=$("$@" 2>&1); rc=$?
echo "$out" | grep -v 'nvcache-stats' | head -n 40
[ $rc -eq 0 ] || { echo "expect.sh: exit status $rc"; exit 1; }
echo "$out" | grep -Eq -- "$re" || { echo "expect.sh: output does not match: $re"; exit 1; }
