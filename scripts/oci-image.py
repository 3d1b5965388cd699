#!/usr/bin/env python3
"""Builds and checks an OCI image tarball without Docker (scripts/release.sh --dry-run).

  oci-image.py build --dockerfile Dockerfile.release --stage operator --context DIR \
      --arch amd64 --version 0.1.0 --revision REV --epoch SECONDS --name REF --out FILE
  oci-image.py check FILE [--run-version VERSION]

`build` reads the stage of the Dockerfile (and the stages it is built FROM) for the image's user,
entrypoint, command, environment, ports, labels and the files it copies from the context, and
writes an OCI image layout (oci-layout, index.json, blobs/sha256/...) as one tar file, with a
Docker-compatible manifest.json beside it so that `docker load` and `kind load image-archive`
take it too. The runtime base image (distroless static, nonroot) cannot be pulled offline, so a
stand-in layer gives what the images rely on from it: /etc/passwd and /etc/group with the
nonroot user (65532), its home, /tmp, /etc/nsswitch.conf, and the CA bundle (this machine's
/etc/ssl/certs/ca-certificates.crt when there is one). Every timestamp is --epoch and gzip
writes no time, so the same binaries give the same digests.

`check` opens such a tarball and checks what a registry or runtime would: the layout's version,
that every descriptor's blob exists with its size and sha256, that the config's diff_ids are the
sha256 of the uncompressed layers, the platform, a numeric non-root user, and that the
entrypoint is an executable file in the layers. With --run-version it also runs the entrypoint
(extracted from the image, when the image's platform is this machine's) with --version and
expects `NAME VERSION`.

  oci-image.py smoke TARGET_TAR LOADGEN_TAR

`smoke` unpacks the two images into one root filesystem (no libc in it: the binaries are
static), adds an /etc/hosts naming the target as the kubelet would, starts the target's
entrypoint there (chroot, as the image's user; as root, or in a user namespace through
`unshare -r`), and runs the load generator's entrypoint against it by host name for two
seconds: every request must succeed. As root it also answers DNS itself (a stub server on
127.53.0.1:53 named by /etc/resolv.conf) and runs the load generator once more against a name
only DNS knows, so both of the static glibc's resolvers (files, dns) are exercised. Skipped,
with a note, where neither chroot is possible.

Only Dockerfile instructions the release images use are understood: ARG, FROM, LABEL, USER,
ENV, EXPOSE, COPY (from the context, no flags), ENTRYPOINT and CMD (exec form); anything else is
refused rather than silently left out of the image.
"""

import argparse
import datetime
import gzip
import hashlib
import io
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import tarfile
import tempfile

MEDIA_INDEX = "application/vnd.oci.image.index.v1+json"
MEDIA_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MEDIA_CONFIG = "application/vnd.oci.image.config.v1+json"
MEDIA_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"

# What the distroless static image's config sets, which the stand-in base keeps.
BASE_ENV = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]
BASE_WORKDIR = "/home/nonroot"
HOST_CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"


def fail(msg):
    sys.exit(f"oci-image: {msg}")


def sha256(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


# ------------------------------------------------------------------------------------------------
# The Dockerfile subset.


def instructions(path):
    """(keyword, rest) per instruction, continuation lines joined, comments dropped."""
    out, pending = [], ""
    with open(path) as f:
        for raw in f:
            line = raw.rstrip("\n")
            if line.lstrip().startswith("#"):
                continue
            if line.endswith("\\"):
                pending += line[:-1] + " "
                continue
            line = (pending + line).strip()
            pending = ""
            if line:
                keyword, _, rest = line.partition(" ")
                out.append((keyword.upper(), rest.strip()))
    return out


def expand(text, args):
    def var(m):
        name = m.group(1) or m.group(2)
        if name not in args:
            fail(f"${{{name}}} has no value (an ARG without a default, not given)")
        return args[name]

    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)", var, text)


def pairs(rest, args):
    out = {}
    for word in shlex.split(rest):
        key, eq, value = word.partition("=")
        if not eq:
            fail(f"expected KEY=VALUE, got {word!r}")
        out[key] = expand(value, args)
    return out


def read_stage(path, stage, given):
    """The image config and the files copied, for `stage` and the stages it is built FROM."""
    global_args, stages, current = {}, {}, None
    for keyword, rest in instructions(path):
        if keyword == "FROM":
            words = rest.split()
            if len(words) != 3 or words[1].upper() != "AS":
                fail(f"FROM {rest}: expected FROM IMAGE AS NAME")
            base, name = expand(words[0], global_args), words[2]
            if base in stages:
                parent = stages[base]
                current = {
                    "args": dict(global_args),
                    "labels": dict(parent["labels"]),
                    "env": list(parent["env"]),
                    "ports": list(parent["ports"]),
                    "user": parent["user"],
                    "entrypoint": parent["entrypoint"],
                    "cmd": parent["cmd"],
                    "copies": list(parent["copies"]),
                    "base": parent["base"],
                }
            else:
                current = {
                    "args": dict(global_args),
                    "labels": {},
                    "env": list(BASE_ENV),
                    "ports": [],
                    "user": "",
                    "entrypoint": None,
                    "cmd": None,
                    "copies": [],
                    "base": base,
                }
            stages[name] = current
            continue
        if keyword == "ARG":
            name, eq, default = rest.partition("=")
            scope = global_args if current is None else current["args"]
            if name in given:
                scope[name] = given[name]
            elif eq:
                scope[name] = expand(default.strip('"'), scope)
            elif name in global_args:
                scope[name] = global_args[name]
            continue
        if current is None:
            fail(f"{keyword} before the first FROM")
        args = current["args"]
        if keyword == "LABEL":
            current["labels"].update(pairs(rest, args))
        elif keyword == "USER":
            current["user"] = expand(rest, args)
        elif keyword == "ENV":
            for key, value in pairs(rest, args).items():
                current["env"] = [e for e in current["env"] if not e.startswith(key + "=")]
                current["env"].append(f"{key}={value}")
        elif keyword == "EXPOSE":
            for port in rest.split():
                port = expand(port, args)
                current["ports"].append(port if "/" in port else port + "/tcp")
        elif keyword == "COPY":
            words = rest.split()
            if len(words) != 2 or words[0].startswith("--"):
                fail(f"COPY {rest}: only `COPY SRC DEST` from the context is understood")
            current["copies"].append((expand(words[0], args), expand(words[1], args)))
        elif keyword in ("ENTRYPOINT", "CMD"):
            try:
                value = json.loads(rest)
            except json.JSONDecodeError:
                fail(f"{keyword} {rest}: only the exec form (a JSON list) is understood")
            if keyword == "ENTRYPOINT":
                current["entrypoint"] = value
                # Docker: a new ENTRYPOINT drops the CMD the stage inherited.
                current["cmd"] = None
            else:
                current["cmd"] = value
        else:
            fail(f"{keyword}: not an instruction this script understands")
    if stage not in stages:
        fail(f"{path} has no stage {stage}")
    return stages[stage]


# ------------------------------------------------------------------------------------------------
# Building.


def layer(entries, epoch):
    """A gzipped layer tar of (path, TarInfo type, mode, uid, data) entries, and its diff_id."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, kind, mode, uid, data in entries:
            info = tarfile.TarInfo(name)
            info.type, info.mode, info.uid, info.gid, info.mtime = kind, mode, uid, uid, epoch
            if kind == tarfile.REGTYPE:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                tar.addfile(info)
    plain = raw.getvalue()
    packed = io.BytesIO()
    with gzip.GzipFile(fileobj=packed, mode="wb", mtime=0, compresslevel=6) as gz:
        gz.write(plain)
    return packed.getvalue(), sha256(plain)


def parents(path):
    """The directories above path, outermost first, as tar names (no leading slash)."""
    parts = path.strip("/").split("/")[:-1]
    return ["/".join(parts[: i + 1]) + "/" for i in range(len(parts))]


def base_layer(epoch):
    passwd = (
        "root:x:0:0:root:/root:/sbin/nologin\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n"
        "nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
    ).encode()
    group = b"root:x:0:\nnobody:x:65534:\ntty:x:5:\nstaff:x:50:\nnonroot:x:65532:\n"
    d, f = tarfile.DIRTYPE, tarfile.REGTYPE
    entries = [
        ("etc/", d, 0o755, 0, None),
        ("etc/group", f, 0o644, 0, group),
        # As distroless has it: host names from /etc/hosts, then DNS.
        ("etc/nsswitch.conf", f, 0o644, 0, b"hosts: files dns\nnetworks: files\n"),
        ("etc/passwd", f, 0o644, 0, passwd),
        ("home/", d, 0o755, 0, None),
        ("home/nonroot/", d, 0o700, 65532, None),
        ("root/", d, 0o700, 0, None),
        ("tmp/", d, 0o1777, 0, None),
    ]
    env = []
    if os.path.isfile(HOST_CA_BUNDLE):
        with open(HOST_CA_BUNDLE, "rb") as bundle:
            entries[1:1] = [
                ("etc/ssl/", d, 0o755, 0, None),
                ("etc/ssl/certs/", d, 0o755, 0, None),
                ("etc/ssl/certs/ca-certificates.crt", f, 0o644, 0, bundle.read()),
            ]
        env.append(f"SSL_CERT_FILE={HOST_CA_BUNDLE}")
    return layer(entries, epoch), env


def build(a):
    given = {"VERSION": a.version, "REVISION": a.revision, "TARGETARCH": a.arch}
    created = datetime.datetime.fromtimestamp(a.epoch, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    given["CREATED"] = created
    stage = read_stage(a.dockerfile, a.stage, given)
    if not stage["entrypoint"]:
        fail(f"stage {a.stage} has no ENTRYPOINT")

    blobs = {}
    (base_blob, base_diff), base_env = base_layer(a.epoch)
    layers = [(base_blob, base_diff, f"stand-in for {stage['base']}: passwd, group, CA bundle")]
    for src, dest in stage["copies"]:
        path = os.path.join(a.context, src)
        if not os.path.isfile(path):
            fail(f"COPY {src}: no file {path}")
        with open(path, "rb") as f:
            data = f.read()
        mode = os.stat(path).st_mode & 0o7777
        entries = [(p, tarfile.DIRTYPE, 0o755, 0, None) for p in parents(dest)]
        entries.append((dest.lstrip("/"), tarfile.REGTYPE, mode, 0, data))
        blob, diff = layer(entries, a.epoch)
        layers.append((blob, diff, f"COPY {src} {dest}"))

    env = list(stage["env"])
    env[1:1] = base_env
    config = {
        "created": created,
        "architecture": a.arch,
        "os": "linux",
        "config": {
            "User": stage["user"],
            "Env": env,
            "Entrypoint": stage["entrypoint"],
            "WorkingDir": BASE_WORKDIR,
            "Labels": dict(sorted(stage["labels"].items())),
        },
        "rootfs": {"type": "layers", "diff_ids": [diff for _, diff, _ in layers]},
        "history": [
            {"created": created, "created_by": note, "comment": "scripts/oci-image.py"}
            for _, _, note in layers
        ],
    }
    if stage["cmd"] is not None:
        config["config"]["Cmd"] = stage["cmd"]
    if stage["ports"]:
        config["config"]["ExposedPorts"] = {p: {} for p in stage["ports"]}
    config_blob = json.dumps(config, indent=2, sort_keys=True).encode()
    blobs[sha256(config_blob)] = config_blob
    for blob, _, _ in layers:
        blobs[sha256(blob)] = blob

    manifest = {
        "schemaVersion": 2,
        "mediaType": MEDIA_MANIFEST,
        "config": {"mediaType": MEDIA_CONFIG, "digest": sha256(config_blob), "size": len(config_blob)},
        "layers": [{"mediaType": MEDIA_LAYER, "digest": sha256(b), "size": len(b)} for b, _, _ in layers],
        "annotations": {"org.opencontainers.image.created": created},
    }
    manifest_blob = json.dumps(manifest, indent=2, sort_keys=True).encode()
    blobs[sha256(manifest_blob)] = manifest_blob
    tag = a.name.rsplit(":", 1)[1] if ":" in a.name.rsplit("/", 1)[-1] else "latest"
    index = {
        "schemaVersion": 2,
        "mediaType": MEDIA_INDEX,
        "manifests": [
            {
                "mediaType": MEDIA_MANIFEST,
                "digest": sha256(manifest_blob),
                "size": len(manifest_blob),
                "platform": {"architecture": a.arch, "os": "linux"},
                "annotations": {
                    "io.containerd.image.name": a.name,
                    "org.opencontainers.image.ref.name": tag,
                },
            }
        ],
    }
    # docker load (before Docker 25 it reads only this file) and kind load image-archive.
    docker_manifest = [
        {
            "Config": "blobs/sha256/" + sha256(config_blob)[7:],
            "RepoTags": [a.name],
            "Layers": ["blobs/sha256/" + sha256(b)[7:] for b, _, _ in layers],
        }
    ]
    files = [
        ("oci-layout", json.dumps({"imageLayoutVersion": "1.0.0"}).encode()),
        ("index.json", json.dumps(index, indent=2, sort_keys=True).encode()),
        ("manifest.json", json.dumps(docker_manifest, indent=2).encode()),
    ]
    files += [("blobs/sha256/" + d[7:], b) for d, b in sorted(blobs.items())]
    tmp = a.out + ".tmp"
    with tarfile.open(tmp, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in ("blobs/", "blobs/sha256/"):
            info = tarfile.TarInfo(name)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, a.epoch
            tar.addfile(info)
        for name, data in files:
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, a.epoch
            tar.addfile(info, io.BytesIO(data))
    os.replace(tmp, a.out)
    print(f"{a.out}: {a.name} linux/{a.arch}, manifest {sha256(manifest_blob)}")


# ------------------------------------------------------------------------------------------------
# Checking.


def check(a):
    problems = []
    with tarfile.open(a.file) as tar:
        members = {m.name.lstrip("./"): m for m in tar.getmembers() if m.isfile()}

        def read(name):
            if name not in members:
                fail(f"{a.file}: no {name}")
            return tar.extractfile(members[name]).read()

        def blob(desc, what):
            digest = desc["digest"]
            if not re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
                fail(f"{what}: digest {digest} is not sha256:<64 hex>")
            data = read("blobs/sha256/" + digest[7:])
            if len(data) != desc["size"]:
                problems.append(f"{what}: {len(data)} bytes, its descriptor says {desc['size']}")
            if sha256(data) != digest:
                problems.append(f"{what}: content hashes to {sha256(data)}, not {digest}")
            return data

        layout = json.loads(read("oci-layout"))
        if layout.get("imageLayoutVersion") != "1.0.0":
            problems.append(f"oci-layout: imageLayoutVersion {layout.get('imageLayoutVersion')}")
        index = json.loads(read("index.json"))
        if index.get("schemaVersion") != 2 or not index.get("manifests"):
            fail(f"{a.file}: index.json is not an OCI index with manifests")
        referenced = set()
        for desc in index["manifests"]:
            if desc.get("mediaType") != MEDIA_MANIFEST:
                fail(f"index.json: a descriptor of type {desc.get('mediaType')}")
            manifest = json.loads(blob(desc, "manifest"))
            referenced.add(desc["digest"])
            config = json.loads(blob(manifest["config"], "config"))
            referenced.add(manifest["config"]["digest"])
            if manifest["config"].get("mediaType") != MEDIA_CONFIG:
                problems.append(f"config media type {manifest['config'].get('mediaType')}")
            plat = desc.get("platform", {})
            if (plat.get("os"), plat.get("architecture")) != (config["os"], config["architecture"]):
                problems.append(f"index platform {plat} is not the config's {config['os']}/{config['architecture']}")
            diff_ids = config["rootfs"]["diff_ids"]
            if len(diff_ids) != len(manifest["layers"]):
                problems.append(f"{len(manifest['layers'])} layers, {len(diff_ids)} diff_ids")
            files = {}
            for i, (ldesc, diff) in enumerate(zip(manifest["layers"], diff_ids)):
                before = len(problems)
                data = blob(ldesc, f"layer {i}")
                referenced.add(ldesc["digest"])
                if len(problems) > before:
                    continue
                try:
                    plain = gzip.decompress(data) if ldesc["mediaType"].endswith("+gzip") else data
                except (OSError, EOFError) as e:
                    problems.append(f"layer {i}: not a gzip stream ({e})")
                    continue
                if sha256(plain) != diff:
                    problems.append(f"layer {i}: uncompressed it hashes to {sha256(plain)}, its diff_id is {diff}")
                with tarfile.open(fileobj=io.BytesIO(plain)) as ltar:
                    for m in ltar.getmembers():
                        files["/" + m.name.lstrip("./")] = (m, plain)
            cfg = config["config"]
            user = cfg.get("User", "")
            uid = user.split(":")[0]
            if not uid.isdigit() or int(uid) == 0:
                problems.append(f"User {user!r} is not a numeric non-root user")
            entry = (cfg.get("Entrypoint") or [None])[0]
            if entry not in files or not files[entry][0].isfile():
                problems.append(f"entrypoint {entry} is not a file in the layers")
            elif not files[entry][0].mode & 0o111:
                problems.append(f"entrypoint {entry} is not executable (mode {files[entry][0].mode:o})")
            elif a.run_version:
                here = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine())
                if here != config["architecture"]:
                    print(f"  (not run: a linux/{config['architecture']} entrypoint on linux/{here})")
                else:
                    member, plain = files[entry]
                    with tarfile.open(fileobj=io.BytesIO(plain)) as ltar, tempfile.TemporaryDirectory() as tmp:
                        exe = os.path.join(tmp, os.path.basename(entry))
                        with open(exe, "wb") as f:
                            f.write(ltar.extractfile(member.name).read())
                        os.chmod(exe, 0o755)
                        said = subprocess.run([exe, "--version"], capture_output=True, text=True)
                    want = f"{os.path.basename(entry)} {a.run_version}"
                    if said.returncode != 0 or said.stdout.strip() != want:
                        problems.append(f"{entry} --version said {said.stdout.strip()!r} (exit {said.returncode}), not {want!r}")
                    else:
                        print(f"  {entry} --version: {said.stdout.strip()}")
            name = desc.get("annotations", {}).get("io.containerd.image.name", "?")
            if a.name and name != a.name:
                problems.append(f"index.json names the image {name}, not {a.name}")
            if a.entrypoint and entry != a.entrypoint:
                problems.append(f"the entrypoint is {entry}, not {a.entrypoint}")
            print(
                f"  {name} linux/{config['architecture']}: user {user}, entrypoint {cfg.get('Entrypoint')}"
                f" cmd {cfg.get('Cmd')}, ports {sorted(cfg.get('ExposedPorts', {}))},"
                f" {len(diff_ids)} layers, manifest {desc['digest']}"
            )
        stray = {"sha256:" + n.split("/")[-1] for n in members if n.startswith("blobs/sha256/")} - referenced
        if stray:
            problems.append(f"blobs nothing references: {sorted(stray)}")
        if "manifest.json" in members:
            for entry in json.loads(read("manifest.json")):
                for path in [entry["Config"], *entry["Layers"]]:
                    if path not in members:
                        problems.append(f"manifest.json names {path}, which is not in the archive")
    if problems:
        fail(f"{a.file}:\n  " + "\n  ".join(problems))
    print(f"ok: {a.file}")


def extract_all(tar, dest):
    """tar.extractall, with the "tar" filter where this Python has extraction filters (3.11.4+;
    Debian bookworm's 3.11.2 has none): file modes kept, no path outside dest."""
    if hasattr(tarfile, "tar_filter"):
        tar.extractall(dest, filter="tar")
    else:
        for member in tar.getmembers():
            if member.name.startswith("/") or ".." in member.name.split("/"):
                fail(f"a layer entry outside the root: {member.name}")
        tar.extractall(dest)


def image_files(path):
    """The config and the merged layers of the one image in an OCI image tarball."""
    with tarfile.open(path) as tar:
        index = json.load(tar.extractfile("index.json"))
        blob = lambda d: tar.extractfile("blobs/sha256/" + d[7:]).read()  # noqa: E731
        manifest = json.loads(blob(index["manifests"][0]["digest"]))
        config = json.loads(blob(manifest["config"]["digest"]))
        layers = [gzip.decompress(blob(layer["digest"])) for layer in manifest["layers"]]
    return config, layers


def dns_stub(address):
    """A DNS server on UDP address answering every A query with 127.0.0.1 (and nothing else);
    runs in a daemon thread. Returns the names it was asked for."""
    import socket
    import struct
    import threading

    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(address)
    asked = []

    def serve():
        while True:
            query, peer = sock.recvfrom(512)
            end, labels = 12, []
            while query[end]:
                labels.append(query[end + 1 : end + 1 + query[end]].decode())
                end += query[end] + 1
            qtype = struct.unpack(">H", query[end + 1 : end + 3])[0]
            question = query[12 : end + 5]
            asked.append(".".join(labels))
            answers = b""
            if qtype == 1:
                answers = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 5, 4) + socket.inet_aton("127.0.0.1")
            header = struct.pack(">HHHHHH", struct.unpack(">H", query[:2])[0], 0x8180, 1, 1 if answers else 0, 0, 0)
            sock.sendto(header + question + answers, peer)

    threading.Thread(target=serve, daemon=True).start()
    return asked


def smoke(a):
    import socket
    import time
    import urllib.request

    def works(cmd):
        try:
            return subprocess.run(cmd, capture_output=True).returncode == 0
        except OSError:
            return False

    if os.geteuid() == 0 and works(["chroot", "/", "true"]):
        prefix = ["chroot", "--userspec=65532:65532"]
    elif works(["unshare", "-r", "chroot", "/", "true"]):
        prefix = ["unshare", "-r", "chroot"]
    else:
        print("  (smoke test skipped: no chroot here, neither as root nor through `unshare -r`)")
        return
    with tempfile.TemporaryDirectory() as root:
        os.chmod(root, 0o755)
        configs = []
        for path in (a.target, a.loadgen):
            config, layers = image_files(path)
            configs.append(config["config"])
            for plain in layers:
                with tarfile.open(fileobj=io.BytesIO(plain)) as tar:
                    extract_all(tar, root)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        with open(os.path.join(root, "etc/hosts"), "w") as f:
            f.write("127.0.0.1 localhost\n127.0.0.1 bm-target.bench.svc.cluster.local bm-target\n")
        prefix = [*prefix, root]
        target_cfg, loadgen_cfg = configs
        env = dict(e.split("=", 1) for e in target_cfg.get("Env", []))
        env["PORT"] = str(port)
        target = subprocess.Popen(
            [*prefix, *target_cfg["Entrypoint"], *(target_cfg.get("Cmd") or [])],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        try:
            for _ in range(100):
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1).read()
                    break
                except OSError:
                    if target.poll() is not None:
                        fail(f"the target's entrypoint exited {target.returncode}: {target.stdout.read()}")
                    time.sleep(0.1)
            else:
                fail("the target did not answer /healthz within 10 s")
            env = dict(e.split("=", 1) for e in loadgen_cfg.get("Env", []))
            hosts = [("/etc/hosts", "bm-target.bench.svc.cluster.local")]
            if os.geteuid() == 0:
                # An address of its own on the loopback (127.0.0.53 may be systemd-resolved's).
                try:
                    asked = dns_stub(("127.53.0.1", 53))
                    with open(os.path.join(root, "etc/resolv.conf"), "w") as f:
                        f.write("nameserver 127.53.0.1\noptions timeout:2 attempts:2\n")
                    hosts.append(("DNS", "only-in-dns.bench.example"))
                except OSError as e:
                    print(f"  (no DNS stub on 127.53.0.1:53, {e}: DNS resolution not exercised)")
            for source, host in hosts:
                url = f"http://{host}:{port}/fast"
                said = subprocess.run(
                    [*prefix, *loadgen_cfg["Entrypoint"], "--json", "-d", "2s", "-c", "2", "-t", "1", url],
                    env=env, capture_output=True, text=True, timeout=60,
                )
                if said.returncode != 0:
                    fail(f"the load generator exited {said.returncode}: {said.stderr.strip()}")
                stream = json.loads(said.stdout)["phases"][0]["streams"][0]
                if stream["requests"] == 0 or stream["errors"] != 0:
                    fail(f"the load generator against {url}: {stream['requests']} requests, "
                         f"{stream['errors']} errors {stream['errorsByKind']}")
                if source == "DNS" and host not in asked:
                    fail(f"{host} was resolved without asking the DNS stub")
                print(f"  smoke: in a chroot of the images (no libc), the load generator sent "
                      f"{stream['requests']} requests to the target by a host name from {source} "
                      f"({url}), none failed")
        finally:
            target.terminate()
            target.wait(timeout=10)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--dockerfile", required=True)
    b.add_argument("--stage", required=True)
    b.add_argument("--context", required=True)
    b.add_argument("--arch", required=True, choices=["amd64", "arm64"])
    b.add_argument("--version", required=True)
    b.add_argument("--revision", default="unknown")
    b.add_argument("--epoch", type=int, required=True)
    b.add_argument("--name", required=True)
    b.add_argument("--out", required=True)
    c = sub.add_parser("check")
    c.add_argument("file")
    c.add_argument("--run-version")
    c.add_argument("--name", help="the image reference index.json must name")
    c.add_argument("--entrypoint", help="the entrypoint's program the config must name")
    sm = sub.add_parser("smoke")
    sm.add_argument("target")
    sm.add_argument("loadgen")
    a = p.parse_args()
    {"build": build, "check": check, "smoke": smoke}[a.cmd](a)


if __name__ == "__main__":
    main()
