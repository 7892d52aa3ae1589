#!/usr/bin/env bash
# OpenMPI for the GPU machine, which has no MPI and reaches no package registry: multi-GPU runs need MPI
# to start the ranks and to pass NCCL its bootstrap id (docs/parallel.md). Debian 12's OpenMPI 4.1.4 is
# carried as .debs and used from where unpack.sh extracts them, relocated with environment variables.
#   scripts/device-openmpi.sh fetch      here, in the project root: downloads the packages into .device-debs/
#                                        (DEST overrides), beside those of ../shared/device/fetch-debs.sh
#   source scripts/device-openmpi.sh env there, after `source .device-debs/unpack.sh`: exports what mpirun
#                                        and CMake's FindMPI need, checks mpirun, prints the CMake flag
# Checked on the Debian 12 development machine only, NOT on the GPU machine: the packages unpacked into a
# fresh prefix, the system OpenMPI, its libraries and ssh hidden (mount namespace); a C program built with
# the prefix's mpicc ran 2 ranks under its mpirun (libmpi mapped from the prefix), FindMPI found the
# prefix's mpicc, headers and libmpi, and ompi_info opened every component without a load error.
# DEBROOT overrides /tmp/debroot (unpack.sh's folder).

# Runtime closure of libopenmpi3 and openmpi-bin (every ELF's DT_NEEDED resolved), headers and wrapper data
# (libopenmpi-dev, openmpi-common). Left out: what Ubuntu 24.04 has (libc6, libstdc++6, libgcc-s1, zlib1g,
# libudev1, libuuid1; libatomic1 comes with its GCC 13), openssh-client (plm=isolated below),
# libhwloc-plugins (optional X11/OpenCL plugins), and libopenmpi-dev's -dev dependencies (not needed to
# compile and link C against the shared libmpi).
_ompi_pkgs=(openmpi-bin openmpi-common libopenmpi3 libopenmpi-dev libpmix2 libmunge2 libhwloc15
            libevent-core-2.1-7 libevent-pthreads-2.1-7 libfabric1 libucx0 libibverbs1 ibverbs-providers
            librdmacm1 libpsm2-2 libpsm-infinipath1 libnl-3-200 libnl-route-3-200 libnuma1)

_ompi_env() {
  local root=${DEBROOT:-/tmp/debroot}
  local lib=$root/usr/lib/x86_64-linux-gnu
  if [ ! -x "$root/usr/bin/orterun" ]; then
    echo "device-openmpi.sh: no OpenMPI in $root: run 'scripts/device-openmpi.sh fetch' on the development" \
         "machine, carry .device-debs, and 'source .device-debs/unpack.sh' here first" >&2
    return 1
  fi
  # dpkg -x runs no maintainer scripts: make the links that update-alternatives would (mpirun, mpicc...)
  # and libpsm-infinipath1's soname link, without which libfabric and mtl_psm fail to load (a warning per rank).
  local n
  for n in mpirun mpiexec mpicc mpicxx mpic++; do ln -sfn "$n.openmpi" "$root/usr/bin/$n"; done
  local psm
  psm=$(ls "$root"/usr/lib/libpsm1/libpsm_infinipath.so.1.* 2>/dev/null | head -1)
  [ -n "$psm" ] && ln -sfn "$psm" "$lib/libpsm_infinipath.so.1"
  export PATH=$root/usr/bin:$PATH
  # libnl-3-200 installs into /lib, not /usr/lib, which unpack.sh does not add.
  export LD_LIBRARY_PATH=$lib:$root/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  # OpenMPI's compiled-in paths are under /usr: without OPAL_PREFIX mpirun finds no components or help
  # files and mpicc no wrapper data (FindMPI then fails). Debian's sysconfdir (/etc/openmpi) is not under
  # the prefix; its openmpi-mca-params.conf turns off the openib/ofi/ucx transports as Debian ships it.
  export OPAL_PREFIX=$root/usr OPAL_SYSCONFDIR=$root/etc/openmpi
  # PMIx (libpmix2) has its own paths, absolute (/usr/lib/x86_64-linux-gnu/pmix2/{lib,share}), so its
  # PMIX_PREFIX moves nothing: its plugins (else a warning per run) and help files.
  export PMIX_LIBDIR=$lib/pmix2/lib PMIX_DATADIR=$lib/pmix2/share
  # One host, maybe without ssh: the default launcher (rsh) refuses to start even local ranks without ssh.
  export OMPI_MCA_plm=isolated
  local v
  if ! v=$(mpirun --version 2>&1) || [[ $v != *"Open MPI"* ]]; then
    echo "device-openmpi.sh: mpirun ($(command -v mpirun)) does not work:" >&2
    echo "$v" >&2
    return 1
  fi
  echo "OpenMPI: ${v%%$'\n'*} ($(command -v mpirun)); configure with -DMPI_C_COMPILER=$root/usr/bin/mpicc"
}

case "${1:-}" in
  fetch)
    (
      set -euo pipefail
      dest=${DEST:-.device-debs}
      mkdir -p "$dest"
      [ -n "${DEST:-}" ] || grep -qx '/.device-debs/' .git/info/exclude 2>/dev/null || echo '/.device-debs/' >> .git/info/exclude
      unpack=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../../shared/device/unpack.sh
      [ -f "$dest/unpack.sh" ] || cp "$unpack" "$dest/"
      cd "$dest"
      chmod 777 . 2>/dev/null || true  # apt-get download as root fetches as _apt
      apt-get download "${_ompi_pkgs[@]}" 2>&1 | grep -v -e '^W: Download is performed unsandboxed' -e '^Get:' -e '^Fetched' || true
      for p in "${_ompi_pkgs[@]}"; do ls "${p}"_*.deb >/dev/null 2>&1 || { echo "device-openmpi.sh: $p was not downloaded" >&2; exit 1; }; done
      echo "${#_ompi_pkgs[@]} OpenMPI packages in $dest; on the GPU machine: source $dest/unpack.sh; source scripts/device-openmpi.sh env"
    ) ;;
  env)
    if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
      echo "device-openmpi.sh: source it: source scripts/device-openmpi.sh env" >&2
      exit 1
    fi
    _ompi_env ;;
  *)
    echo "usage: scripts/device-openmpi.sh fetch | source scripts/device-openmpi.sh env" >&2
    [[ "${BASH_SOURCE[0]}" == "$0" ]] && exit 2 || return 2 ;;
esac
