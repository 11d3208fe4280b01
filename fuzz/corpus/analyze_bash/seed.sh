#!/usr/bin/env bash
source ./lib/common.sh
PREFIX=/usr/local

# Installs one package.
install_pkg() {
    if [ -z "$1" ]; then
        die "no package"
    fi
    log_info "installing $1"
    cp "$1" "$PREFIX"
}

install_pkg "$@"
