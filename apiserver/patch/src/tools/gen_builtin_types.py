#!/usr/bin/env python3
"""Generate builtin_types.jsonl: the field layout and list/map/patch markers of the built-in
Kubernetes kinds the embedded API server serves.

Input: the Go API type definitions (k8s.io/api, k8s.io/apimachinery meta/v1,
k8s.io/apiextensions-apiserver v1) as bare git mirrors. Output: JSON lines of facts, the
kinds first, then one line per type (field names, field types, +listType/+listMapKey/
+mapType/+structType markers, Go patchStrategy/patchMergeKey tags and +default markers),
read by `patch::typeinfo`.

Usage: gen_builtin_types.py API_GIT APIMACHINERY_GIT APIEXTENSIONS_GIT AGGREGATOR_GIT [REV] > builtin_types.jsonl
REV is the git revision of all four mirrors (default v0.35.6, matching k8s-openapi's v1_35).
"""
import json
import re
import subprocess
import sys

API, MACHINERY, APIEXT, AGGREGATOR = sys.argv[1:5]
REV = sys.argv[5] if len(sys.argv) > 5 else "v0.35.6"

SOURCES = [
    # (qualifier, repo, path, go package alias used by other packages)
    ("core.v1", API, "core/v1/types.go"),
    ("apps.v1", API, "apps/v1/types.go"),
    ("batch.v1", API, "batch/v1/types.go"),
    ("rbac.v1", API, "rbac/v1/types.go"),
    ("coordination.v1", API, "coordination/v1/types.go"),
    ("certificates.v1", API, "certificates/v1/types.go"),
    ("events.v1", API, "events/v1/types.go"),
    ("authorization.v1", API, "authorization/v1/types.go"),
    ("autoscaling.v1", API, "autoscaling/v1/types.go"),
    ("autoscaling.v2", API, "autoscaling/v2/types.go"),
    ("policy.v1", API, "policy/v1/types.go"),
    ("networking.v1", API, "networking/v1/types.go"),
    ("storage.v1", API, "storage/v1/types.go"),
    ("resource.v1", API, "resource/v1/types.go"),
    ("scheduling.v1", API, "scheduling/v1/types.go"),
    ("admissionregistration.v1", API, "admissionregistration/v1/types.go"),
    ("flowcontrol.v1", API, "flowcontrol/v1/types.go"),
    ("apiregistration.v1", AGGREGATOR, "pkg/apis/apiregistration/v1/types.go"),
    ("meta.v1", MACHINERY, "pkg/apis/meta/v1/types.go"),
    ("apiextensions.v1", APIEXT, "pkg/apis/apiextensions/v1/types.go"),
    ("apiextensions.v1", APIEXT, "pkg/apis/apiextensions/v1/types_jsonschema.go"),
]

# Go import aliases -> qualifier
ALIASES = {
    "metav1": "meta.v1",
    "v1": "core.v1",
    "corev1": "core.v1",
    "apiv1": "core.v1",
}

SCALARS = {
    "string", "bool", "int", "int32", "int64", "uint", "uint32", "uint64", "float32", "float64",
    "byte", "[]byte",
    "metav1.Time", "metav1.MicroTime", "metav1.Duration", "resource.Quantity",
    "intstr.IntOrString", "types.UID", "Time", "MicroTime", "Duration",
    "types.NodeName",
}
UNTYPED = {
    "runtime.RawExtension", "metav1.FieldsV1", "FieldsV1", "JSON", "apiextensionsv1.JSON",
    "JSONSchemaPropsOrArray", "JSONSchemaPropsOrBool", "JSONSchemaPropsOrStringArray",
    "runtime.Object", "interface{}", "any",
}

# Kinds served (group, kind) -> Go type.
KINDS = {
    "/Namespace": "core.v1.Namespace",
    "/Secret": "core.v1.Secret",
    "/ConfigMap": "core.v1.ConfigMap",
    "/ServiceAccount": "core.v1.ServiceAccount",
    "/Event": "core.v1.Event",
    "/Node": "core.v1.Node",
    "/Pod": "core.v1.Pod",
    "/Service": "core.v1.Service",
    "/Endpoints": "core.v1.Endpoints",
    "/PersistentVolumeClaim": "core.v1.PersistentVolumeClaim",
    "/PodTemplate": "core.v1.PodTemplate",
    "/ReplicationController": "core.v1.ReplicationController",
    "/LimitRange": "core.v1.LimitRange",
    "/ResourceQuota": "core.v1.ResourceQuota",
    "apps/Deployment": "apps.v1.Deployment",
    "apps/ReplicaSet": "apps.v1.ReplicaSet",
    "apps/StatefulSet": "apps.v1.StatefulSet",
    "apps/DaemonSet": "apps.v1.DaemonSet",
    "apps/ControllerRevision": "apps.v1.ControllerRevision",
    "batch/Job": "batch.v1.Job",
    "batch/CronJob": "batch.v1.CronJob",
    "coordination.k8s.io/Lease": "coordination.v1.Lease",
    "events.k8s.io/Event": "events.v1.Event",
    "certificates.k8s.io/CertificateSigningRequest": "certificates.v1.CertificateSigningRequest",
    "rbac.authorization.k8s.io/Role": "rbac.v1.Role",
    "rbac.authorization.k8s.io/ClusterRole": "rbac.v1.ClusterRole",
    "rbac.authorization.k8s.io/RoleBinding": "rbac.v1.RoleBinding",
    "rbac.authorization.k8s.io/ClusterRoleBinding": "rbac.v1.ClusterRoleBinding",
    "apiextensions.k8s.io/CustomResourceDefinition": "apiextensions.v1.CustomResourceDefinition",
    "authorization.k8s.io/SubjectAccessReview": "authorization.v1.SubjectAccessReview",
    "authorization.k8s.io/SelfSubjectAccessReview": "authorization.v1.SelfSubjectAccessReview",
    "authorization.k8s.io/LocalSubjectAccessReview": "authorization.v1.LocalSubjectAccessReview",
    "authorization.k8s.io/SelfSubjectRulesReview": "authorization.v1.SelfSubjectRulesReview",
    "autoscaling/Scale": "autoscaling.v1.Scale",
    "/PersistentVolume": "core.v1.PersistentVolume",
    "autoscaling/HorizontalPodAutoscaler": "autoscaling.v2.HorizontalPodAutoscaler",
    "policy/PodDisruptionBudget": "policy.v1.PodDisruptionBudget",
    "networking.k8s.io/Ingress": "networking.v1.Ingress",
    "networking.k8s.io/IngressClass": "networking.v1.IngressClass",
    "networking.k8s.io/NetworkPolicy": "networking.v1.NetworkPolicy",
    "storage.k8s.io/StorageClass": "storage.v1.StorageClass",
    "resource.k8s.io/ResourceClaim": "resource.v1.ResourceClaim",
    "resource.k8s.io/DeviceClass": "resource.v1.DeviceClass",
    "scheduling.k8s.io/PriorityClass": "scheduling.v1.PriorityClass",
    "admissionregistration.k8s.io/MutatingWebhookConfiguration":
        "admissionregistration.v1.MutatingWebhookConfiguration",
    "admissionregistration.k8s.io/ValidatingWebhookConfiguration":
        "admissionregistration.v1.ValidatingWebhookConfiguration",
    "admissionregistration.k8s.io/ValidatingAdmissionPolicy":
        "admissionregistration.v1.ValidatingAdmissionPolicy",
    "admissionregistration.k8s.io/ValidatingAdmissionPolicyBinding":
        "admissionregistration.v1.ValidatingAdmissionPolicyBinding",
    "flowcontrol.apiserver.k8s.io/FlowSchema": "flowcontrol.v1.FlowSchema",
    "flowcontrol.apiserver.k8s.io/PriorityLevelConfiguration":
        "flowcontrol.v1.PriorityLevelConfiguration",
    "apiregistration.k8s.io/APIService": "apiregistration.v1.APIService",
}

FIELD_RE = re.compile(r'^\s*(?:(\w+)\s+)?([\w\.\*\[\]\{\}]+(?:\[[\w\.]+\][\w\.\*\[\]]+)?)\s+`([^`]*)`')
TAG_RE = re.compile(r'(\w+):"([^"]*)"')


def git_show(repo, path):
    return subprocess.run(["git", "--git-dir", repo, "show", REV + ":" + path],
                          check=True, capture_output=True, text=True).stdout


structs = {}   # qualified name -> {"fields": [...], "atomic": bool}
aliases = {}   # qualified name -> go type expr (with qualifier context)


def markers(comment_lines):
    out = {}
    keys = []
    for c in comment_lines:
        m = re.match(r'^\s*//\s*\+(listType|mapType|structType|listMapKey|default)=(.*)$', c)
        if m:
            if m.group(1) == "listMapKey":
                keys.append(m.group(2).strip())
            else:
                out[m.group(1)] = m.group(2).strip()
    if keys:
        out["listMapKey"] = keys
    return out


def parse_file(qual, text):
    lines = text.split("\n")
    i = 0
    pending = []
    while i < len(lines):
        line = lines[i]
        if line.startswith("//"):
            pending.append(line)
            i += 1
            continue
        m = re.match(r'^type (\w+) struct \{\s*$', line)
        if m:
            name = qual + "." + m.group(1)
            tmarks = markers(pending)
            pending = []
            fields = []
            fpending = []
            i += 1
            depth = 1
            while i < len(lines) and depth > 0:
                fl = lines[i]
                s = fl.strip()
                if s == "}":
                    depth -= 1
                    i += 1
                    continue
                if s.startswith("//"):
                    fpending.append(s)
                    i += 1
                    continue
                if s == "":
                    fpending = []
                    i += 1
                    continue
                fm = FIELD_RE.match(fl)
                if fm:
                    fname, ftype, tag = fm.group(1), fm.group(2), fm.group(3)
                    tags = dict(TAG_RE.findall(tag))
                    fields.append({
                        "go": fname, "type": ftype, "tags": tags, "marks": markers(fpending),
                    })
                elif s.endswith("{"):
                    raise SystemExit("nested struct not supported in %s: %s" % (name, s))
                fpending = []
                i += 1
            structs[name] = {"fields": fields, "marks": tmarks}
            continue
        m = re.match(r'^type (\w+) struct\s*\{\}\s*$', line)
        if m:
            structs[qual + "." + m.group(1)] = {"fields": [], "marks": markers(pending)}
            pending = []
            i += 1
            continue
        m = re.match(r'^type (\w+) ([\w\.\*\[\]]+)\s*(//.*)?$', line)
        if m and m.group(2) not in ("struct", "interface"):
            aliases[qual + "." + m.group(1)] = (qual, m.group(2), markers(pending))
        pending = []
        i += 1


for qual, repo, path in SOURCES:
    parse_file(qual, git_show(repo, path))

used = {}


def resolve_name(qual, name):
    """Qualified struct/alias name for a Go type name, or None."""
    if "." in name:
        pkg, base = name.split(".", 1)
        q = ALIASES.get(pkg)
        if q is None:
            return None
        return q + "." + base
    return qual + "." + name


def type_expr(qual, go, marks):
    """JSON type expression for a Go type expression in package qual."""
    while go.startswith("*"):
        go = go[1:]
    if go in SCALARS or go == "[]byte":
        return "scalar"
    if go in UNTYPED:
        return "untyped"
    if go.startswith("[]"):
        item = type_expr(qual, go[2:], {})
        t = {"list": item}
        if "listType" in marks:
            t["listType"] = marks["listType"]
        if "listMapKey" in marks:
            t["keys"] = marks["listMapKey"]
        return t
    m = re.match(r'^map\[([\w\.]+)\](.+)$', go)
    if m:
        t = {"map": type_expr(qual, m.group(2), {})}
        if marks.get("mapType") == "atomic":
            t["atomic"] = True
        return t
    qn = resolve_name(qual, go)
    if qn in SCALARS_Q:
        return "scalar"
    if qn in structs:
        emit(qn)
        if marks.get("structType") == "atomic":
            return {"ref": qn, "atomic": True}
        if marks.get("structType") == "granular":
            return {"ref": qn, "atomic": False}
        return qn
    if qn in aliases:
        aqual, target, amarks = aliases[qn]
        merged = dict(amarks)
        merged.update(marks)
        return type_expr(aqual, target, merged)
    raise SystemExit("unknown type %s (%s) in %s" % (go, qn, qual))


SCALARS_Q = {"meta.v1.Time", "meta.v1.MicroTime", "meta.v1.Duration"}


def field_json_name(f):
    j = f["tags"].get("json", "")
    return j.split(",")[0], (",inline" in j)


def emit(qn):
    if qn in used:
        return
    used[qn] = None  # placeholder against recursion
    st = structs[qn]
    qual = qn.rsplit(".", 1)[0]
    fields = {}
    for f in st["fields"]:
        jname, inline = field_json_name(f)
        if jname == "-":
            continue
        if inline or (f["go"] is None and jname == ""):
            target = f["type"].lstrip("*")
            tq = resolve_name(qual, target)
            if tq in ("meta.v1.TypeMeta",):
                fields["apiVersion"] = {"t": "scalar"}
                fields["kind"] = {"t": "scalar"}
                continue
            emit(tq)
            for k, v in used[tq]["f"].items():
                fields[k] = v
            continue
        if jname == "":
            jname = f["go"]
        spec = {"t": type_expr(qual, f["type"], f["marks"])}
        ps = f["tags"].get("patchStrategy")
        if ps:
            spec["ps"] = ps
        mk = f["tags"].get("patchMergeKey")
        if mk:
            spec["mk"] = mk
        if "default" in f["marks"]:
            try:
                spec["d"] = json.loads(f["marks"]["default"])
            except json.JSONDecodeError:
                spec["d"] = f["marks"]["default"]
        fields[jname] = spec
    out = {"f": fields}
    if st["marks"].get("structType") == "atomic":
        out["atomic"] = True
    used[qn] = out


for kind, tn in KINDS.items():
    emit(tn)

# One JSON document per line: the kinds first, then each type as [name, definition], so that
# the server can index the types without parsing their definitions.
json.dump({"kinds": KINDS}, sys.stdout, sort_keys=True, separators=(",", ":"))
sys.stdout.write("\n")
for name in sorted(used):
    json.dump([name, used[name]], sys.stdout, sort_keys=True, separators=(",", ":"))
    sys.stdout.write("\n")
