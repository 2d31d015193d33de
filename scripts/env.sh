#!/usr/bin/env bash
# Shared set-up for scripts/rehearse.sh and scripts/test.sh; sourced, not run.
# Installs only what the project needs: Debian packages for the podman test bed (when root),
# a virtualenv in .venv with the pinned requirements. Nothing else system-wide.
set -euo pipefail

EAGLE3_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
EAGLE3_VENV="${EAGLE3_VENV:-$EAGLE3_ROOT/.venv}"
export EAGLE3_ROOT EAGLE3_VENV

eagle3_log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

# eagle3_apt_prereqs [EXTRA_COMMAND...]: podman, runc, debootstrap, python3-venv, openssh-client, and any extra
# commands (each installed from the Debian package of the same name).
eagle3_apt_prereqs() {
  local missing=() cmd
  for cmd in podman runc debootstrap "$@"; do
    command -v "$cmd" >/dev/null 2>&1 || missing+=("$cmd")
  done
  python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=(python3-venv)
  # ssh and ssh-keygen: the rehearsal hosts are reached over SSH on 127.0.0.1, like real ones.
  command -v ssh-keygen >/dev/null 2>&1 || missing+=(openssh-client)
  # debootstrap of Debian bookworm (the rehearsal image) checks Debian's archive key (Ubuntu lacks it).
  [ -e /usr/share/keyrings/debian-archive-keyring.gpg ] || missing+=(debian-archive-keyring)
  [ "${#missing[@]}" -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "missing: ${missing[*]} (run as root, or: sudo apt-get install ${missing[*]})" >&2
    return 1
  fi
  eagle3_log "apt-get install ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" uidmap iptables ca-certificates >/dev/null
}

# eagle3_venv REQUIREMENTS_FILE: create .venv and install the file when its content changed.
eagle3_venv() {
  local req="$EAGLE3_ROOT/$1" stamp want
  [ -x "$EAGLE3_VENV/bin/python" ] || { eagle3_log "python3 -m venv $EAGLE3_VENV"; python3 -m venv "$EAGLE3_VENV"; }
  stamp="$EAGLE3_VENV/.eagle3-$(basename "$req").sha256"
  want="$(cat "$EAGLE3_ROOT"/requirements*.txt | sha256sum | cut -d' ' -f1)"
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    eagle3_log "pip install -r $1"
    # --no-compile: byte-compiling every installed file (ansible alone is thousands) took half of the
    # install's CPU (102 -> 57 CPU-s for requirements-dev.txt, 2026-12-01); Python compiles what is
    # imported on first use, into the venv.
    "$EAGLE3_VENV/bin/pip" install -q --no-compile --disable-pip-version-check -r "$req"
    echo "$want" > "$stamp"
  fi
}

eagle3_activate() {
  export PATH="$EAGLE3_VENV/bin:$PATH"
  # Where molecule and the tests find eagle3.trn2: the checkout (its committed link collections/ansible_collections/
  # eagle3/trn2, the one ansible.cfg names), unless scripts/test.sh installed a copy.
  export EAGLE3_COLLECTIONS="${EAGLE3_COLLECTIONS:-$EAGLE3_ROOT/collections}"
  export CONTAINERS_CONF="${CONTAINERS_CONF:-$EAGLE3_ROOT/inventories/rehearsal/containers.conf}"
  export ANSIBLE_CONFIG="$EAGLE3_ROOT/ansible.cfg"
  export ANSIBLE_FORCE_COLOR="${ANSIBLE_FORCE_COLOR:-0}"
  cd "$EAGLE3_ROOT"
}

# eagle3_collection_install DEST: build the collection from the checkout and install it into DEST (a
# collections path, emptied first), the way an ops team installs it. Its dependencies (amazon.aws,
# containers.podman, ...) come with the pinned ansible package, so Galaxy is not needed (--no-deps).
eagle3_collection_install() {
  local dest="$1" build
  build="$(mktemp -d)"
  ansible-galaxy collection build --force --output-path "$build" "$EAGLE3_ROOT" >/dev/null
  rm -rf "$dest/ansible_collections/eagle3/trn2"
  ANSIBLE_COLLECTIONS_PATH="$dest" ansible-galaxy collection install --no-deps --force -p "$dest" "$build"/eagle3-trn2-*.tar.gz >/dev/null
  rm -rf "$build"
  eagle3_log "eagle3.trn2 $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["collection_info"]["version"])' \
    "$dest/ansible_collections/eagle3/trn2/MANIFEST.json") installed in $dest"
}
