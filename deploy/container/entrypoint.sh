#!/bin/sh
# The image's entry point. `service-local` and `service-supervisor` listen on every interface on port 9997 unless
# given -H/--host or -p/--port; `service-worker` needs -e (the supervisor) and -H (the address it is reached at),
# so it gets only the port. Arguments that start with `-` go to service-local: `run IMAGE --log-level debug`.
# Anything else runs as given (`run IMAGE servicectl list`, `run IMAGE sh`).
set -e
case "${1:-}" in
  -*|'') set -- service-local "$@" ;;
esac
program=$1
shift
case "$program" in
  service-local|service-supervisor|service-worker)
    host=yes port=yes
    for argument in "$@"; do
      case "$argument" in
        -H|--host|--host=*) host=no ;;
        -p|--port|--port=*) port=no ;;
      esac
    done
    [ "$program" = service-worker ] && host=no
    [ "$host" = yes ] && set -- -H 0.0.0.0 "$@"
    [ "$port" = yes ] && set -- -p "${SERVICE_PORT:-9997}" "$@"
    exec "$program" "$@"
    ;;
esac
exec "$program" "$@"
