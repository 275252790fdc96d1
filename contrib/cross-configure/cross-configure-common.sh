# cross-configure-common.sh - what the cross-configure-* scripts share;
# each sources it, says what configure gets, then calls cross_run.
#
#   cross_init "$@"          the script's own options (--dry-run, --help);
#                            the rest go to configure after the script's
#   cross_arg ARG...         an argument of configure (an option or VAR=VALUE)
#   cross_host TRIPLET       --host=TRIPLET, and --build from config.guess so
#                            configure always takes it for a cross build
#   cross_preset VAR VALUE WHY
#                            a cache variable: a value configure would measure
#                            by running a program, which a cross build cannot
#   cross_fail MESSAGE       stops with MESSAGE and how to go on
#   cross_note MESSAGE       a line printed before configure runs
#   cross_run                prints the configure command, then runs it from
#                            the current folder (with --dry-run, only prints)
#
# configure is found in SLUICE_SRCDIR, else two folders above the script
# (contrib/cross-configure in a source tree), else in the current folder's
# parent; an installed copy (share/sluice/cross-configure) needs
# SLUICE_SRCDIR.

cross_name=$(basename "$0")
cross_args=
cross_user=
cross_dry=no

# A single-quoted copy of $1 for eval.
cross_q() {
    printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"
}

cross_fail() {
    printf '%s: %s\n' "$cross_name" "$*" >&2
    exit 1
}

cross_init() {
    for a; do
        case $a in
        --dry-run) cross_dry=yes ;;
        -h|--help)
            sed -n '2,/^$/{s/^# \{0,1\}//;p;}' "$0"
            exit 0 ;;
        *) cross_user="$cross_user $(cross_q "$a")" ;;
        esac
    done
    if [ -n "${SLUICE_SRCDIR:-}" ]; then
        [ -x "$SLUICE_SRCDIR/configure" ] && [ -f "$SLUICE_SRCDIR/include/sluice.h" ] ||
            cross_fail "SLUICE_SRCDIR=$SLUICE_SRCDIR has no configure (run ./autogen.sh there first)"
        cross_configure=$(cd "$SLUICE_SRCDIR" && pwd)/configure
        return
    fi
    for d in "$(dirname "$0")/../.." ..; do
        if [ -x "$d/configure" ] && [ -f "$d/include/sluice.h" ]; then
            cross_configure=$(cd "$d" && pwd)/configure
            return
        fi
    done
    cross_fail "cannot find Sluice's configure: set SLUICE_SRCDIR to the source tree (run ./autogen.sh there first)"
}

cross_note() {
    cross_notes="${cross_notes:-}$cross_name: $*
"
}

cross_arg() {
    for a; do cross_args="$cross_args $(cross_q "$a")"; done
}

cross_host() {
    cross_arg --build="$("$(dirname "$cross_configure")/config/config.guess")" --host="$1"
}

cross_preset() {
    cross_args="$cross_args $(cross_q "$1=$2")"
    cross_presets="${cross_presets:-}  $1=$2  ($3)
"
}

cross_run() {
    echo "$cross_name: $cross_configure, for a cross build"
    eval "set -- $cross_args $cross_user"
    for a; do printf '  %s\n' "$a"; done
    if [ -n "${cross_presets:-}" ]; then
        echo "$cross_name: values configure cannot measure for the target, preset:"
        printf '%s' "$cross_presets"
    fi
    printf '%s' "${cross_notes:-}"
    [ "$cross_dry" = yes ] && exit 0
    exec "$cross_configure" "$@"
}
