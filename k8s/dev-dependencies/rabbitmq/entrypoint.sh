#!/bin/sh
# The broker of compose and the test cluster: starts RabbitMQ, then gives every deployable its own user
# (broker-users.sh, beside this file). The healthcheck passes only once the users exist, so no service
# connects before its user does.
set -eu
ready=/tmp/meter-broker-users-ready
rm -f "$ready"
docker-entrypoint.sh rabbitmq-server &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null || true' TERM INT
until rabbitmqctl -q await_startup --timeout 60 >/dev/null 2>&1; do
  kill -0 "$pid" 2>/dev/null || exit 1
  sleep 2
done
sh "$(dirname "$0")/broker-users.sh"
touch "$ready"
# The first wait returns when the trap runs; the second collects the broker's exit.
wait "$pid" || true
wait "$pid"
