#!/usr/bin/env bash
# Install what Chorus needs from Debian's packages, if anything is missing.
# Run as root (or with sudo available) on Debian 12.
set -euo pipefail
# MPICH beside Open MPI (for the -Dmpi=mpich build; the mpi alternatives stay
# on Open MPI), gfortran for the interposer's Fortran tests, and for the
# vcluster suite iproute2 (ip, tc: its namespaces, links and rate limits;
# without it the suite skips) and bc (its driver's timings); python3-venv
# and python3-dev for the venvs the conformance suite builds mpi4py in;
# cmake for the package test's find_package(chorus) consumer.
pkgs=(g++ gfortran meson ninja-build pkg-config libopenmpi-dev openmpi-bin mpich libmpich-dev libucx-dev catch2 python3
  python3-matplotlib iproute2 bc python3-venv python3-dev cmake)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
