#!/bin/bash
# Debris check around the CTest suite.
#   shm_debris.sh baseline FILE   records the nvcache mailboxes in /dev/shm before the suite
#   shm_debris.sh check FILE      fails if a mailbox appeared since, if a test's NVCACHE_DIR
#                                 (/dev/shm/nvcache-ctest-*) holds a file, or if an emulated
#                                 hosts' folder (/dev/shm/nvcache-emu-*) is left; removes those
#                                 directories
set -u
mode=$1 list=$2
mailboxes() { ls /dev/shm | grep -E '^nvcache-[0-9a-f]{16}-n[0-9]+$' | sort; }
case $mode in
baseline)
    mailboxes > "$list"
    ;;
check)
    bad=0
    left=$(comm -13 "$list" <(mailboxes))
    if [ -n "$left" ]; then
        echo "mailboxes left in /dev/shm by the suite:" $left
        bad=1
    fi
    for d in /dev/shm/nvcache-emu-*; do
        [ -e "$d" ] || continue
        echo "emulated hosts' /dev/shm folder left by the suite: $d"
        rm -rf "$d"
        bad=1
    done
    for d in /dev/shm/nvcache-ctest-*; do
        [ -d "$d" ] || continue
        if [ -n "$(ls -A "$d")" ]; then
            echo "files left in $d:" $(ls -A "$d")
            bad=1
        else
            rmdir "$d"
        fi
    done
    exit $bad
    ;;
*)
    echo "usage: shm_debris.sh baseline|check FILE" >&2
    exit 2
    ;;
esac
