#!/bin/bash
# Readiness of clamd in production (k8s/components/clamav-freshclam): ready only when clamd answers PING
# and its database folder holds ClamAV's official databases (main and daily, which freshclam keeps
# current), the daily one built within the bound. The project's test signatures alone (meter-test.*,
# the EICAR test string) protect nothing, and neither does a daily database freshclam stopped updating:
# then clamd takes no scans, and the files service keeps uploads `verifying` instead of passing them.
#
# Usage: clamd-ready [database folder] [bound in hours] [port]   (defaults /var/lib/clamav, 48, 3310)
# The bound: ClamAV publishes the daily database several times a day and freshclam asks every 2 hours
# (Checks 12), so 48 hours is a day-long outage of the mirror, or of a rate limit's cool-down, with a
# day to spare; past it the scanner misses two days of signatures.
set -eu
db="${1:-/var/lib/clamav}"
bound_hours="${2:-48}"
port="${3:-3310}"

# To stderr, so that it is shown from inside a command substitution too (the probe's output shows both).
not_ready() {
  echo "clamd not ready: $*" >&2
  exit 1
}

# The build time of a .cvd or .cld (seconds since the epoch): field 9 of its 512-byte header
# `ClamAV-VDB:<build date>:<version>:<signatures>:<level>:<md5>:<signature>:<builder>:<build time>`.
built_at() {
  local header
  header="$(head -c 512 "$1" | tr -d '\0')"
  case "$header" in
    ClamAV-VDB:*) ;;
    *) not_ready "$1 is not a ClamAV database" ;;
  esac
  local seconds
  seconds="$(printf '%s' "$header" | cut -d: -f9 | tr -d ' ')"
  case "$seconds" in
    '' | *[!0-9]*) not_ready "$1 has no build time in its header" ;;
  esac
  echo "$seconds"
}

newest=0
for name in main daily; do
  found=0
  for file in "$db/$name.cvd" "$db/$name.cld"; do
    [ -f "$file" ] || continue
    found=1
    if [ "$name" = daily ]; then
      at="$(built_at "$file")"
      if [ "$at" -gt "$newest" ]; then newest="$at"; fi
    else
      built_at "$file" >/dev/null
    fi
  done
  if [ "$found" = 0 ]; then
    if compgen -G "$db/meter-test.*" >/dev/null; then not_ready "only the test signatures in $db (no $name.cvd or $name.cld: freshclam has not run)"; fi
    not_ready "no $name.cvd or $name.cld in $db"
  fi
done

age=$(($(date +%s) - newest))
if [ "$age" -gt $((bound_hours * 3600)) ]; then
  not_ready "the daily database was built $((age / 3600)) hours ago ($(date -u -d "@$newest" '+%F %R UTC')), over the bound of $bound_hours hours: is freshclam updating?"
fi

clamd-ping "$port" || not_ready "clamd does not answer PING on port $port"
