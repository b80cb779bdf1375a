#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Every pktmap library exports its documented API and nothing else.

  abi_exports.py --build BUILD_DIR SOURCE_DIR   the libraries of a build
  abi_exports.py --installed LIBDIR INCLUDEDIR  an install (a package)

For each library, `nm -D --defined-only` against what its headers declare:
  libpktmap          exactly the functions <pktmap/*.h> declares, each
                     under the version node PKTMAP_1.0
  libpktmap-netmap   exactly the functions and variables of <libnetmap.h>,
                     <net/netmap_user.h> and <net/netmap_fd.h> (libnetmap,
                     pktmap_nm_*, pktmap_nmfd_*), under PKTMAP_NETMAP_1.0:
                     no libc name
  the netmap preload exactly libc's names it stands in for (netmap-run)
  libpcap (compat)   a subset of what the system's libpcap.so.0.8 exports,
  and its preload    and the marker pktmap_pcap_compat
Prints one line per library; exits 1 on the first difference.
"""
import glob
import os
import re
import subprocess
import sys

PRELOAD = {
    "open", "open64", "__open_2", "__open64_2", "openat", "openat64",
    "__openat_2", "__openat64_2", "ioctl", "mmap", "mmap64", "munmap",
    "poll", "__poll_chk", "ppoll", "__ppoll_chk", "select", "pselect",
    "epoll_ctl", "epoll_wait", "epoll_pwait", "close", "dup", "dup2", "dup3",
}


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def exports(lib):
    """{name: version or ''} of the defined dynamic symbols of lib."""
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 3 or parts[1] == "A":  # the version node itself
            continue
        if parts[2].startswith("__odr_asan"):
            # AddressSanitizer's one-definition-rule marker beside each
            # exported variable: in sanitizer builds only, not API
            continue
        name, _, ver = parts[2].partition("@")
        syms[name] = ver.lstrip("@")
    return syms


def declared(headers, prefix):
    """Names matching prefix that the headers declare as functions (or
    extern variables) and do not define inline."""
    names, inline = set(), set()
    for h in headers:
        text = re.sub(r"/\*.*?\*/|//[^\n]*", " ", open(h).read(), flags=re.S)
        text = re.sub(r"#\s*define[^\n]*", " ", text)
        inline |= set(re.findall(r"static[^;{(]*?\b(\w+)\s*\(", text))
        names |= set(re.findall(r"\b(" + prefix + r")\s*\(", text))
        names |= set(re.findall(r"\b(?:extern|PCAP_API)\s+[\w\s*]+?\b("
                                + prefix + r")\s*(?:\[\s*\])?\s*;", text))
    return names - inline


def check(lib, want, version=None, subset=False):
    if not os.path.exists(lib):
        fail(f"{lib}: not there")
    got = exports(lib)
    extra = sorted(set(got) - want)
    missing = sorted(want - set(got))
    if extra:
        fail(f"{lib} exports what no header documents: {' '.join(extra)}")
    if missing and not subset:
        fail(f"{lib} lacks documented symbols: {' '.join(missing)}")
    if version:
        bad = sorted(n for n, v in got.items() if v != version)
        if bad:
            fail(f"{lib}: not under version node {version}: {' '.join(bad)}")
    print(f"ok {os.path.basename(lib)}: {len(got)} symbols"
          + (f" @{version}" if version else ""))


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("--build", "--installed"):
        fail("usage: abi_exports.py --build BUILD SOURCE | "
             "--installed LIBDIR INCLUDEDIR")
    mode, a, b = sys.argv[1:]
    if mode == "--build":
        libs = {"pktmap": f"{a}/libpktmap.so.0",
                "netmap": f"{a}/compat/netmap/libpktmap-netmap.so.0",
                "netmap_preload": f"{a}/compat/netmap/libpktmap-netmap-preload.so",
                "pcap": f"{a}/compat/pcap/libpcap.so.0.8",
                "pcap_preload": f"{a}/compat/pcap/libpktmap-pcap-preload.so"}
        pktmap_h = glob.glob(f"{b}/include/pktmap/*.h") + \
            glob.glob(f"{a}/include/pktmap/*.h")
        netmap_inc = f"{b}/compat/netmap/include"
    else:
        libs = {"pktmap": f"{a}/libpktmap.so.0",
                "netmap": f"{a}/libpktmap-netmap.so.0",
                "netmap_preload": f"{a}/pktmap/libpktmap-netmap-preload.so",
                "pcap": f"{a}/pktmap/libpcap.so.0.8",
                "pcap_preload": f"{a}/pktmap/libpktmap-pcap-preload.so"}
        pktmap_h = glob.glob(f"{b}/pktmap/*.h")
        netmap_inc = f"{b}/pktmap/netmap-compat"
    check(libs["pktmap"], declared(pktmap_h, r"pktmap_\w+"), "PKTMAP_1.0")
    # The optional libraries are checked where the build or package has them.
    if os.path.exists(libs["netmap"]) or mode == "--build" and \
            os.path.exists(f"{a}/compat/netmap"):
        nm_h = [f"{netmap_inc}/libnetmap.h",
                f"{netmap_inc}/net/netmap_user.h",
                f"{netmap_inc}/net/netmap_fd.h"]
        check(libs["netmap"],
              declared(nm_h, r"(?:nmport|nmctx|nmreq|pktmap_nm\w*)_\w+"),
              "PKTMAP_NETMAP_1.0")
        check(libs["netmap_preload"], PRELOAD)
    if os.path.exists(libs["pcap"]) or mode == "--build" and \
            os.path.exists(f"{a}/compat/pcap"):
        # the system's libpcap.so.0.8, which the compat library replaces
        sys_pcap = subprocess.run(
            ["pkg-config", "--variable=libdir", "libpcap"],
            capture_output=True, text=True).stdout.strip()
        sys_pcap = f"{sys_pcap or '/usr/lib'}/libpcap.so.0.8"
        if not os.path.exists(sys_pcap):
            fail(f"no {sys_pcap} (libpcap0.8) to compare with")
        api = set(exports(sys_pcap)) | {"pktmap_pcap_compat"}
        check(libs["pcap"], api, subset=True)
        check(libs["pcap_preload"], api, subset=True)


main()
