#!/usr/bin/env bash
# Services the tests need: start them when they are not running, remember
# what we started, and stop exactly that. Source this file, then:
#   ensure_build_packages # Debian packages pip needs to build libvirt-python
#   ensure_test_packages # Debian packages for the real-VM tests
#   ensure_rabbitmq      # RabbitMQ on 127.0.0.1:5672 (guest/guest)
#   ensure_libvirtd      # virtlogd + libvirtd (no systemd), qemu:///system
#   ensure_tracefs       # tracefs at /sys/kernel/tracing (sched_wakeup) and
#                        # debugfs at /sys/kernel/debug (sched/debug: dl_bw)
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

# libvirt-python (a requirement of the agent, requirements.txt) has no
# wheel: pip builds it against libvirt's headers with a C compiler.
BUILD_PACKAGES="libvirt-dev pkg-config python3-dev gcc libc6-dev"

# chromium: iosched-iotrace's HTML page is checked in a headless browser
TEST_PACKAGES="$BUILD_PACKAGES libvirt-daemon-system libvirt-clients
qemu-system-x86 qemu-utils busybox-static cpio kmod fio chromium"

_ensure_debs() {  # what-for, packages...
    local why=$1 missing=() pkg; shift
    if ! command -v dpkg-query >/dev/null 2>&1; then
        echo "not a Debian system: install the equivalents of $* ($why)" >&2
        return 1
    fi
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null |
            grep -q "install ok installed" || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "==> services: installing ${missing[*]} (Debian packages: $why)"
    _apt_install "${missing[@]}" || {
        echo "$why needs these Debian packages: apt-get install ${missing[*]}" >&2
        return 1; }
}

ensure_build_packages() {
    # shellcheck disable=SC2086  # a list of words
    _ensure_debs "building libvirt-python" $BUILD_PACKAGES
}

ensure_test_packages() {
    # shellcheck disable=SC2086  # a list of words
    _ensure_debs "the real-VM tests" $TEST_PACKAGES
}

kvm_device_as_udev() {
    # /dev/kvm to Debian's udev default (root:kvm 0660) when libvirt would
    # otherwise re-probe QEMU on every define (iosched.testbed.daemons:
    # kvm_caps_thrash, set_kvm_perms; docs/testbed.md "TCG and host
    # caveats"). Needs the venv; guests stay TCG.
    local py=${VENV:-.venv}/bin/python
    [ -x "$py" ] || return 0
    "$py" -c 'from iosched.testbed import daemons as d
if d.kvm_caps_thrash():
    d.set_kvm_perms()
    print("==> services: /dev/kvm set to root:kvm 0660 (as udev does)")' ||
        echo "warning: could not check /dev/kvm" >&2
    return 0
}

ensure_libvirtd() {
    kvm_device_as_udev
    if virsh -c qemu:///system list >/dev/null 2>&1; then
        echo "==> services: libvirtd already answers"
        return 0
    fi
    command -v libvirtd >/dev/null 2>&1 || { echo "libvirtd not installed" >&2; return 1; }
    mkdir -p /run/libvirt
    if ! [ -f /run/virtlogd.pid ] || ! kill -0 "$(cat /run/virtlogd.pid)" 2>/dev/null; then
        /usr/sbin/virtlogd -d && STARTED_SERVICES+=(virtlogd)
    fi
    /usr/sbin/libvirtd -d || { echo "libvirtd failed to start" >&2; return 1; }
    STARTED_SERVICES+=(libvirtd)
    for _ in $(seq 1 120); do
        virsh -c qemu:///system list >/dev/null 2>&1 && {
            echo "==> services: libvirtd is up"; return 0; }
        sleep 0.25
    done
    echo "libvirtd did not answer within 30 s" >&2
    return 1
}

ensure_tracefs() {
    # The deadline tests read dl_bw from debugfs (a fresh machine has it
    # unmounted).
    if [ ! -e /sys/kernel/debug/sched ] &&
            mount -t debugfs none /sys/kernel/debug 2>/dev/null; then
        STARTED_SERVICES+=(debugfs)
        echo "==> services: mounted debugfs at /sys/kernel/debug"
    fi
    [ -e /sys/kernel/tracing/events ] && return 0
    mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null &&
        STARTED_SERVICES+=(tracefs) &&
        echo "==> services: mounted tracefs at /sys/kernel/tracing"
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

# MariaDB for the one-machine cloud (iosched-cloud): root over the unix
# socket, as Debian's package sets it up.
ensure_mariadb() {
    if _port_open 127.0.0.1 3306 && mysql -uroot -e 'select 1' >/dev/null 2>&1; then
        echo "==> services: MariaDB already answers on 127.0.0.1:3306"
        return 0
    fi
    if ! command -v mariadbd >/dev/null 2>&1 && [ ! -x /usr/sbin/mariadbd ]; then
        echo "==> services: installing mariadb-server (Debian package)"
        _apt_install mariadb-server || return 1
    fi
    echo "==> services: starting MariaDB on loopback"
    mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld 2>/dev/null
    start-stop-daemon --start --oknodo --background \
        --pidfile /run/mysqld/iosched-started.pid --make-pidfile \
        --exec /usr/sbin/mariadbd -- --user=mysql --bind-address=127.0.0.1 \
        >/dev/null 2>&1 || true
    for _ in $(seq 1 120); do
        if mysql -uroot -e 'select 1' >/dev/null 2>&1; then
            STARTED_SERVICES+=(mariadb)
            echo "==> services: MariaDB is up"
            return 0
        fi
        sleep 0.5
    done
    echo "MariaDB did not come up within 60 s" >&2
    return 1
}

stop_started() {
    local svc
    for svc in "${STARTED_SERVICES[@]}"; do
        case "$svc" in
        libvirtd|virtlogd)
            echo "==> services: stopping the $svc we started"
            [ -f "/run/$svc.pid" ] && kill "$(cat "/run/$svc.pid")" 2>/dev/null || true
            ;;
        tracefs)
            umount /sys/kernel/tracing 2>/dev/null || true
            ;;
        debugfs)
            umount /sys/kernel/debug 2>/dev/null || true
            ;;
        mariadb)
            echo "==> services: stopping the MariaDB we started"
            [ -f /run/mysqld/iosched-started.pid ] &&
                kill "$(cat /run/mysqld/iosched-started.pid)" 2>/dev/null || true
            ;;
        rabbitmq)
            echo "==> services: stopping the RabbitMQ we started"
            rabbitmqctl -n rabbit@localhost stop >/dev/null 2>&1 || true
            pkill -f 'epmd -daemon' >/dev/null 2>&1 || true
            ;;
        esac
    done
    STARTED_SERVICES=()
}
