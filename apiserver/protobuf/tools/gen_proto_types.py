#!/usr/bin/env python3
"""Generate types.json: the protobuf field layout of the built-in Kubernetes kinds, read by
`protobuf::table` to turn `application/vnd.kubernetes.protobuf` request bodies into JSON.

Facts used: the `generated.proto` message definitions (field numbers, proto types, repeated/map)
and the Go struct tags of the same packages (`json:"name,omitempty"`, whether the Go field is a
pointer, matched to the proto field by its number in the `protobuf:"..."` tag).

Usage: gen_proto_types.py API_GIT APIMACHINERY_GIT APIEXTENSIONS_GIT AGGREGATOR_GIT [REV] > types.json
REV is the git revision of all four mirrors (default v0.35.6, matching k8s-openapi's v1_35).

Output: {"packages": {apiVersion: proto package}, "messages": {full name: {"fields": [[number,
json name, label, type, value type, flags], ...], "slice": bool}}, "json_name_exceptions": [...]}
label: "o" single, "r" repeated, "m" map (type = key type, value type = map value type).
flags: "p" Go pointer (zero values stay), "e" omitempty (zero values are dropped).
"""
import json
import re
import subprocess
import sys

API, MACHINERY, APIEXT, AGGREGATOR = sys.argv[1:5]
REV = sys.argv[5] if len(sys.argv) > 5 else "v0.35.6"

# (apiVersion or None, repo, directory)
PACKAGES = [
    ("v1", API, "core/v1"),
    ("apps/v1", API, "apps/v1"),
    ("batch/v1", API, "batch/v1"),
    ("rbac.authorization.k8s.io/v1", API, "rbac/v1"),
    ("coordination.k8s.io/v1", API, "coordination/v1"),
    ("certificates.k8s.io/v1", API, "certificates/v1"),
    ("events.k8s.io/v1", API, "events/v1"),
    ("authorization.k8s.io/v1", API, "authorization/v1"),
    ("authentication.k8s.io/v1", API, "authentication/v1"),
    ("autoscaling/v1", API, "autoscaling/v1"),
    ("autoscaling/v2", API, "autoscaling/v2"),
    ("networking.k8s.io/v1", API, "networking/v1"),
    ("storage.k8s.io/v1", API, "storage/v1"),
    ("resource.k8s.io/v1", API, "resource/v1"),
    ("scheduling.k8s.io/v1", API, "scheduling/v1"),
    ("policy/v1", API, "policy/v1"),
    ("admissionregistration.k8s.io/v1", API, "admissionregistration/v1"),
    ("flowcontrol.apiserver.k8s.io/v1", API, "flowcontrol/v1"),
    ("meta.k8s.io/v1", MACHINERY, "pkg/apis/meta/v1"),
    (None, MACHINERY, "pkg/runtime"),
    (None, MACHINERY, "pkg/runtime/schema"),
    (None, MACHINERY, "pkg/util/intstr"),
    (None, MACHINERY, "pkg/api/resource"),
    ("apiextensions.k8s.io/v1", APIEXT, "pkg/apis/apiextensions/v1"),
    ("apiregistration.k8s.io/v1", AGGREGATOR, "pkg/apis/apiregistration/v1"),
]


def git(repo, *args):
    return subprocess.run(["git", "--git-dir", repo, *args],
                          check=True, capture_output=True, text=True).stdout


FIELD_RE = re.compile(r'^\s*(optional|repeated)\s+([\w\.]+)\s+(\w+)\s*=\s*(\d+)\s*;')
MAP_RE = re.compile(r'^\s*map<\s*([\w\.]+)\s*,\s*([\w\.]+)\s*>\s+(\w+)\s*=\s*(\d+)\s*;')
SCALAR = {"string", "bytes", "bool", "int32", "int64", "uint32", "uint64", "sint32", "sint64",
          "fixed32", "fixed64", "sfixed32", "sfixed64", "double", "float"}


def resolve(pkg, t):
    if t in SCALAR:
        return t
    if t.startswith("."):
        return t[1:]
    return pkg + "." + t


def parse_proto(text):
    pkg = re.search(r'^package ([\w\.]+);', text, re.M).group(1)
    messages = {}
    cur = None
    for line in text.split("\n"):
        m = re.match(r'^message (\w+) \{', line)
        if m:
            cur = pkg + "." + m.group(1)
            messages[cur] = []
            continue
        if line.startswith("}"):
            cur = None
            continue
        if cur is None:
            continue
        m = MAP_RE.match(line)
        if m:
            messages[cur].append([int(m.group(4)), m.group(3), "m",
                                  resolve(pkg, m.group(1)), resolve(pkg, m.group(2))])
            continue
        m = FIELD_RE.match(line)
        if m:
            label = "r" if m.group(1) == "repeated" else "o"
            messages[cur].append([int(m.group(4)), m.group(3), label, resolve(pkg, m.group(2)), ""])
    return pkg, messages


GO_FIELD_RE = re.compile(r'^\s*(?:(\w+)\s+)?(\S+)\s+`([^`]*)`')


def parse_go(text):
    """Go struct name -> {proto number: (json name, pointer, omitempty)}; slice alias names."""
    structs = {}
    slices = set()
    cur = None
    for line in text.split("\n"):
        m = re.match(r'^type (\w+) struct \{', line)
        if m:
            cur = m.group(1)
            structs.setdefault(cur, {})
            continue
        m = re.match(r'^type (\w+) \[\]string\s*$', line)
        if m:
            slices.add(m.group(1))
        if cur is None:
            continue
        if line.startswith("}"):
            cur = None
            continue
        m = GO_FIELD_RE.match(line)
        if not m:
            continue
        gotype, tag = m.group(2), m.group(3)
        if m.group(1) is None:
            gotype = m.group(2)
        pm = re.search(r'protobuf:"[^"]*?,(\d+),', tag)
        jm = re.search(r'json:"([^"]*)"', tag)
        if not pm or not jm:
            continue
        parts = jm.group(1).split(",")
        structs[cur][int(pm.group(1))] = (parts[0], gotype.startswith("*"), "omitempty" in parts[1:])
    return structs, slices


packages = {}
messages = {}
exceptions = []
for api_version, repo, d in PACKAGES:
    proto = git(repo, "show", f"{REV}:{d}/generated.proto")
    pkg, msgs = parse_proto(proto)
    if api_version:
        packages[api_version] = pkg
    structs, slices = {}, set()
    for f in git(repo, "ls-tree", "--name-only", REV, d + "/").split():
        if not f.endswith(".go") or f.endswith("_test.go") or "generated" in f.split("/")[-1]:
            continue
        s, sl = parse_go(git(repo, "show", f"{REV}:{f}"))
        for k, v in s.items():
            structs.setdefault(k, {}).update(v)
        slices |= sl
    for name, fields in msgs.items():
        short = name.rsplit(".", 1)[1]
        go = structs.get(short, {})
        out = []
        for num, pname, label, t, vt in fields:
            flags = ""
            jname = pname
            if num in go:
                jname, ptr, omit = go[num]
                if ptr:
                    flags += "p"
                if omit:
                    flags += "e"
                if jname != pname:
                    exceptions.append(f"{name}.{pname}={jname}")
            else:
                flags = "e"
            out.append([num, jname, label, t, vt, flags])
        entry = {"fields": sorted(out)}
        if short in slices:
            entry["slice"] = True
        messages[name] = entry

json.dump({"rev": REV, "packages": packages, "messages": messages,
           "json_name_exceptions": sorted(exceptions)},
          sys.stdout, sort_keys=True, separators=(",", ":"))
sys.stdout.write("\n")
