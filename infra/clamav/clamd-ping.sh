#!/bin/bash
# Healthcheck of the clamd image: healthy only when clamd answers PING with PONG. An open port is not
# enough: a clamd still loading its databases, or wedged, must not receive scans.
set -eu
port="${1:-3310}"
exec 3<>"/dev/tcp/127.0.0.1/${port}"
printf 'zPING\0' >&3
IFS= read -r -d '' -t 5 reply <&3
[ "$reply" = PONG ]
