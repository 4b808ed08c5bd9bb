#!/usr/bin/env bash
# Services the tests need: start them when they are not running, remember
# what we started, and stop exactly that. Source this file, then:
#   ensure_rabbitmq      # RabbitMQ on 127.0.0.1:5672 (guest/guest)
#   stop_started         # stop what ensure_* started (use in a trap)
STARTED_SERVICES=()

_port_open() {  # host port
    (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null && exec 3>&- 3<&-
}

_apt_install() {
    if [ "$(id -u)" != 0 ]; then
        echo "need root to apt-get install $*" >&2; return 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

ensure_rabbitmq() {
    if _port_open 127.0.0.1 5672; then
        echo "==> services: RabbitMQ already answers on 127.0.0.1:5672"
        return 0
    fi
    if ! command -v rabbitmq-server >/dev/null 2>&1; then
        echo "==> services: installing rabbitmq-server (Debian package)"
        _apt_install rabbitmq-server || return 1
    fi
    echo "==> services: starting RabbitMQ on loopback"
    export RABBITMQ_NODENAME=rabbit@localhost RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 \
        ERL_EPMD_ADDRESS=127.0.0.1 \
        RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
    rabbitmq-server -detached >/dev/null 2>&1 || true
    for _ in $(seq 1 240); do
        if rabbitmqctl -n rabbit@localhost -q status >/dev/null 2>&1 &&
           _port_open 127.0.0.1 5672; then
            STARTED_SERVICES+=(rabbitmq)
            echo "==> services: RabbitMQ is up"
            return 0
        fi
        sleep 0.25
    done
    echo "RabbitMQ did not come up within 60 s" >&2
    return 1
}

stop_started() {
    local svc
    for svc in "${STARTED_SERVICES[@]}"; do
        case "$svc" in
        rabbitmq)
            echo "==> services: stopping the RabbitMQ we started"
            rabbitmqctl -n rabbit@localhost stop >/dev/null 2>&1 || true
            pkill -f 'epmd -daemon' >/dev/null 2>&1 || true
            ;;
        esac
    done
    STARTED_SERVICES=()
}
