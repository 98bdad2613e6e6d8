//! Field types of API objects, as the patch algorithms need them: which maps are structs
//! (declared fields) or free-form, which lists are atomic, sets, or maps keyed by some fields,
//! which maps/structs are atomic, default values of list keys, and the strategic-merge-patch
//! strategy (`patchStrategy`/`patchMergeKey`) of each field.
//!
//! Two sources:
//! - built-in kinds: `builtin_types.jsonl`, generated from the Kubernetes Go API types by
//!   `tools/gen_builtin_types.py` (see [`ObjectType::builtin`]);
//! - custom resources: the version's `openAPIV3Schema` with its `x-kubernetes-list-type`,
//!   `x-kubernetes-list-map-keys`, `x-kubernetes-map-type`, `x-kubernetes-preserve-unknown-fields`
//!   and `x-kubernetes-embedded-resource` extensions (see [`ObjectType::from_crd_schema`]).
//!
//! Anything not described (unknown fields, preserved unknown fields) is "untyped", the way
//! structured-merge-diff deduces it: objects merge per key, lists are atomic.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, RwLock};

use serde_json::Value;

/// Index of a node in a [`TypeSet`].
pub type NodeId = usize;

const SCALAR: NodeId = 0;
const UNTYPED: NodeId = 1;

/// How the elements of a list relate, for server-side apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListKind {
    /// The list is one value; applying replaces it.
    Atomic,
    /// A set of scalars; items are identified by value.
    Set,
    /// A list of objects identified by these key fields.
    Map(Vec<String>),
}

/// The strategic-merge-patch metadata of a field.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Smp {
    /// `patchStrategy` contains `merge` (lists merge instead of replacing).
    pub merge: bool,
    /// `patchStrategy` contains `replace` (objects replace instead of merging).
    pub replace: bool,
    /// `patchStrategy` contains `retainKeys` (the patch lists the keys an object keeps).
    pub retain_keys: bool,
    /// `patchMergeKey`.
    pub merge_key: Option<String>,
}

/// A declared field of a struct.
#[derive(Debug, Clone)]
pub struct Field {
    /// The field's type.
    pub ty: NodeId,
    /// Its strategic-merge-patch markers.
    pub smp: Smp,
    /// Its declared default (custom resources' schemas).
    pub default: Option<Value>,
}

/// A JSON object: a struct (declared fields), a free-form map (`elem`), or both.
#[derive(Debug, Clone, Default)]
pub struct MapNode {
    /// The declared fields.
    pub fields: HashMap<String, Field>,
    /// The type of the other keys' values (a free-form map).
    pub elem: Option<NodeId>,
    /// Replaced as a whole by apply (`x-kubernetes-map-type: atomic`).
    pub atomic: bool,
}

/// A node of the type graph.
#[derive(Debug, Clone)]
pub enum Node {
    /// A string, number or boolean.
    Scalar,
    /// Anything (no schema).
    Untyped,
    /// An object.
    Map(MapNode),
    /// A list of `items`, merged as `kind` says.
    List {
        /// The items' type.
        items: NodeId,
        /// How apply and strategic merge treat the list.
        kind: ListKind,
    },
}

/// An arena of type nodes (types may be recursive, e.g. `JSONSchemaProps`).
#[derive(Debug, Clone)]
pub struct TypeSet {
    nodes: Vec<Node>,
}

impl TypeSet {
    fn new() -> TypeSet {
        TypeSet {
            nodes: vec![Node::Scalar, Node::Untyped],
        }
    }

    fn push(&mut self, node: Node) -> NodeId {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    fn node(&self, id: NodeId) -> &Node {
        self.nodes.get(id).unwrap_or(&Node::Untyped)
    }

    /// Copies node `id` of `other` (and everything it reaches) into `self`.
    fn import(
        &mut self,
        other: &TypeSet,
        id: NodeId,
        memo: &mut HashMap<NodeId, NodeId>,
    ) -> NodeId {
        if id == SCALAR || id == UNTYPED {
            return id;
        }
        if let Some(&mapped) = memo.get(&id) {
            return mapped;
        }
        let slot = self.push(Node::Untyped);
        memo.insert(id, slot);
        let copied = match other.node(id) {
            Node::Scalar => Node::Scalar,
            Node::Untyped => Node::Untyped,
            Node::List { items, kind } => Node::List {
                items: self.import(other, *items, memo),
                kind: kind.clone(),
            },
            Node::Map(m) => {
                let mut fields = HashMap::with_capacity(m.fields.len());
                for (name, f) in &m.fields {
                    let ty = self.import(other, f.ty, memo);
                    fields.insert(name.clone(), Field { ty, ..f.clone() });
                }
                let elem = m.elem.map(|e| self.import(other, e, memo));
                Node::Map(MapNode {
                    fields,
                    elem,
                    atomic: m.atomic,
                })
            }
        };
        if let Some(n) = self.nodes.get_mut(slot) {
            *n = copied;
        }
        slot
    }
}

/// The field types of one kind (one version), cheap to clone. Hand it to
/// [`apply_strategic_merge_patch`](super::strategic::apply_strategic_merge_patch),
/// [`apply`](super::apply::apply) and [`record_update`](super::managed_fields::record_update).
#[derive(Debug, Clone)]
pub struct ObjectType {
    set: Arc<TypeSet>,
    root: NodeId,
}

impl ObjectType {
    /// The types of a built-in kind (`group` is `""` for the core group), or `None` if the
    /// kind is not built in. The table covers every kind the server serves.
    pub fn builtin(group: &str, kind: &str) -> Option<ObjectType> {
        let table = TABLE.as_ref().ok()?;
        let name = *table.kinds.get(&(group, kind))?;
        builtin_type(name)
    }

    /// The types of a custom resource version from its `openAPIV3Schema` (the JSON of
    /// `spec.versions[].schema.openAPIV3Schema`). `apiVersion`, `kind` and `metadata`
    /// (ObjectMeta) are added when the schema does not declare them.
    pub fn from_crd_schema(schema: &Value) -> ObjectType {
        let mut set = TypeSet::new();
        let mut memo = HashMap::new();
        let meta = builtin_type(OBJECT_META)
            .map(|m| set.import(&m.set, m.root, &mut memo))
            .unwrap_or(UNTYPED);
        let mut converter = SchemaConverter {
            set: &mut set,
            object_meta: meta,
        };
        let root = converter.convert(schema, true);
        ObjectType {
            set: Arc::new(set),
            root,
        }
    }

    /// Everything untyped: objects merge per key, lists are atomic. For objects whose schema
    /// is unknown.
    pub fn untyped() -> ObjectType {
        ObjectType {
            set: Arc::new(TypeSet::new()),
            root: UNTYPED,
        }
    }

    /// The root of the type graph.
    pub fn root(&self) -> TypeRef<'_> {
        TypeRef {
            set: &self.set,
            id: self.root,
        }
    }
}

/// Whether strategic merge patch is available for a kind: built-in kinds only; custom
/// resources answer 415 UnsupportedMediaType.
pub fn supports_strategic_merge_patch(group: &str, kind: &str) -> bool {
    ObjectType::builtin(group, kind).is_some()
}

/// A position in a type graph.
#[derive(Debug, Clone, Copy)]
pub struct TypeRef<'a> {
    set: &'a TypeSet,
    id: NodeId,
}

impl<'a> TypeRef<'a> {
    fn at(self, id: NodeId) -> TypeRef<'a> {
        TypeRef { set: self.set, id }
    }

    /// The untyped node of the same graph.
    pub fn untyped(self) -> TypeRef<'a> {
        self.at(UNTYPED)
    }

    /// The node this position names.
    pub fn node(self) -> &'a Node {
        self.set.node(self.id)
    }

    /// The struct/map description, if this node is an object.
    pub fn map(self) -> Option<&'a MapNode> {
        match self.node() {
            Node::Map(m) => Some(m),
            _ => None,
        }
    }

    /// The type of member `name` of an object, and its declaration if it is a struct field.
    pub fn field(self, name: &str) -> (TypeRef<'a>, Option<&'a Field>) {
        match self.node() {
            Node::Map(m) => match m.fields.get(name) {
                Some(f) => (self.at(f.ty), Some(f)),
                None => (self.at(m.elem.unwrap_or(UNTYPED)), None),
            },
            _ => (self.untyped(), None),
        }
    }

    /// Whether `name` is a declared field of this struct.
    pub fn has_field(self, name: &str) -> bool {
        self.map().is_some_and(|m| m.fields.contains_key(name))
    }

    /// The item type of a list (untyped for anything else).
    pub fn items(self) -> TypeRef<'a> {
        match self.node() {
            Node::List { items, .. } => self.at(*items),
            _ => self.untyped(),
        }
    }

    /// The list kind (untyped lists are atomic).
    pub fn list_kind(self) -> &'a ListKind {
        static ATOMIC: ListKind = ListKind::Atomic;
        match self.node() {
            Node::List { kind, .. } => kind,
            _ => &ATOMIC,
        }
    }

    /// Whether this object node is atomic.
    pub fn map_is_atomic(self) -> bool {
        self.map().is_some_and(|m| m.atomic)
    }

    /// The default of declared field `name` (list keys may be defaulted).
    pub fn field_default(self, name: &str) -> Option<&'a Value> {
        self.map()?.fields.get(name)?.default.as_ref()
    }
}

/// Converts an `openAPIV3Schema` (JSONSchemaProps JSON) into type nodes.
struct SchemaConverter<'s> {
    set: &'s mut TypeSet,
    object_meta: NodeId,
}

impl SchemaConverter<'_> {
    fn convert(&mut self, schema: &Value, root: bool) -> NodeId {
        let Value::Object(s) = schema else {
            return UNTYPED;
        };
        let flag = |k: &str| s.get(k).and_then(Value::as_bool).unwrap_or(false);
        if flag("x-kubernetes-int-or-string") {
            return SCALAR;
        }
        let ty = s.get("type").and_then(Value::as_str).unwrap_or("");
        let is_object = ty == "object"
            || (ty.is_empty()
                && (s.contains_key("properties") || s.contains_key("additionalProperties")));
        match ty {
            "array" => {
                let items = s
                    .get("items")
                    .map(|i| self.convert(i, false))
                    .unwrap_or(UNTYPED);
                let kind = match s.get("x-kubernetes-list-type").and_then(Value::as_str) {
                    Some("map") => ListKind::Map(
                        s.get("x-kubernetes-list-map-keys")
                            .and_then(Value::as_array)
                            .map(|keys| {
                                keys.iter()
                                    .filter_map(Value::as_str)
                                    .map(str::to_string)
                                    .collect()
                            })
                            .unwrap_or_default(),
                    ),
                    Some("set") => ListKind::Set,
                    _ => ListKind::Atomic,
                };
                self.set.push(Node::List { items, kind })
            }
            "string" | "integer" | "number" | "boolean" => SCALAR,
            _ if is_object || root => {
                let slot = self.set.push(Node::Untyped);
                let mut node = MapNode {
                    atomic: s.get("x-kubernetes-map-type").and_then(Value::as_str)
                        == Some("atomic"),
                    ..MapNode::default()
                };
                if let Some(Value::Object(props)) = s.get("properties") {
                    for (name, prop) in props {
                        let ty = if root && name == "metadata" {
                            self.object_meta
                        } else {
                            self.convert(prop, false)
                        };
                        let default = prop.get("default").cloned();
                        node.fields.insert(
                            name.clone(),
                            Field {
                                ty,
                                smp: Smp::default(),
                                default,
                            },
                        );
                    }
                }
                node.elem = match s.get("additionalProperties") {
                    Some(Value::Bool(true)) => Some(UNTYPED),
                    Some(ap @ Value::Object(_)) => Some(self.convert(ap, false)),
                    _ => None,
                };
                if flag("x-kubernetes-preserve-unknown-fields") && node.elem.is_none() {
                    node.elem = Some(UNTYPED);
                }
                if root || flag("x-kubernetes-embedded-resource") {
                    for name in ["apiVersion", "kind"] {
                        node.fields.entry(name.to_string()).or_insert(Field {
                            ty: SCALAR,
                            smp: Smp::default(),
                            default: None,
                        });
                    }
                    let meta = self.object_meta;
                    node.fields
                        .entry("metadata".to_string())
                        .and_modify(|f| f.ty = meta)
                        .or_insert(Field {
                            ty: meta,
                            smp: Smp::default(),
                            default: None,
                        });
                }
                if let Some(n) = self.set.nodes.get_mut(slot) {
                    *n = Node::Map(node);
                }
                slot
            }
            _ => UNTYPED,
        }
    }
}

const OBJECT_META: &str = "meta.v1.ObjectMeta";

/// The generated table of built-in types, indexed but not loaded: each kind's type name and
/// each type's definition as it stands in the embedded text. A kind's types are loaded the
/// first time it is asked for ([`builtin_type`]): a server writes only some of the table's
/// kinds (the idle hub holds 195 KiB of built-in types this way; loading all 430 held 582 KiB
/// in every server, measured with a heap profiler).
struct Table {
    /// `(group, Kind)` to the Go type name of its object (`core.v1.Pod`).
    kinds: HashMap<(&'static str, &'static str), &'static str>,
    /// Go type name to its line in the text: `[name, {"f": {field: {"t": …, "ps": …, "mk": …,
    /// "d": …}}, "atomic": …}]`.
    types: HashMap<&'static str, &'static str>,
}

#[derive(serde::Deserialize)]
struct KindsLine<'a> {
    #[serde(borrow)]
    kinds: HashMap<&'a str, &'a str>,
}

/// Indexes the table's text: JSON lines, the kinds first, then one type per line.
fn index_table(text: &'static str) -> Result<Table, String> {
    let mut lines = text.lines();
    let mut kinds = HashMap::new();
    for (key, name) in serde_json::from_str::<KindsLine<'static>>(lines.next().unwrap_or_default())
        .map_err(|e| format!("kinds: {e}"))?
        .kinds
    {
        let group_kind = key
            .split_once('/')
            .ok_or_else(|| format!("kinds: {key:?} is not group/Kind"))?;
        kinds.insert(group_kind, name);
    }
    let mut types = HashMap::new();
    for (n, line) in lines.enumerate() {
        let (name, serde::de::IgnoredAny) =
            serde_json::from_str(line).map_err(|e| format!("line {}: {e}", n + 2))?;
        types.insert(name, line);
    }
    Ok(Table { kinds, types })
}

static TABLE: LazyLock<Result<Table, String>> = LazyLock::new(|| {
    let parsed = index_table(include_str!("builtin_types.jsonl"));
    if let Err(e) = &parsed {
        tracing::error!(error = %e, "built-in type table is invalid; strategic merge patch and typed apply are unavailable");
    }
    parsed
});

/// The built-in types loaded so far, by Go type name (`None`: it would not load, logged once).
static LOADED: LazyLock<RwLock<HashMap<&'static str, Option<ObjectType>>>> =
    LazyLock::new(|| RwLock::new(HashMap::new()));

/// The type graph of the built-in Go type `name` (`core.v1.Pod`, [`OBJECT_META`]) and
/// everything it reaches, loaded on first use.
fn builtin_type(name: &'static str) -> Option<ObjectType> {
    if let Some(loaded) = LOADED.read().unwrap_or_else(|p| p.into_inner()).get(name) {
        return loaded.clone();
    }
    let table = TABLE.as_ref().ok()?;
    let mut loaded = LOADED.write().unwrap_or_else(|p| p.into_inner());
    loaded
        .entry(name)
        .or_insert_with(|| match load_type(table, name) {
            Ok(t) => Some(t),
            Err(e) => {
                tracing::error!(error = %e, r#type = name, "built-in type does not load; strategic merge patch and typed apply of it are unavailable");
                None
            }
        })
        .clone()
}

/// Loads type `root` of `table` and every type it reaches into a type set of their own.
fn load_type(table: &Table, root: &'static str) -> Result<ObjectType, String> {
    let mut loader = Loader {
        table,
        set: TypeSet::new(),
        ids: HashMap::new(),
        pending: Vec::new(),
        overrides: Vec::new(),
    };
    let root_id = loader.id_of(root)?;
    while let Some((name, id)) = loader.pending.pop() {
        let node = loader.struct_node(name)?;
        if let Some(slot) = loader.set.nodes.get_mut(id) {
            *slot = Node::Map(node);
        }
    }
    // Field-level `+structType` markers: a copy of the struct with its atomicity replaced.
    for (slot, base, atomic) in std::mem::take(&mut loader.overrides) {
        let mut node = loader.set.node(base).clone();
        if let Node::Map(m) = &mut node {
            m.atomic = atomic;
        }
        if let Some(n) = loader.set.nodes.get_mut(slot) {
            *n = node;
        }
    }
    Ok(ObjectType {
        set: Arc::new(loader.set),
        root: root_id,
    })
}

struct Loader<'t> {
    table: &'t Table,
    set: TypeSet,
    ids: HashMap<&'static str, NodeId>,
    /// Types given a node whose definition is still to be read.
    pending: Vec<(&'static str, NodeId)>,
    /// (node, struct it copies, atomic) for field-level `+structType` overrides.
    overrides: Vec<(NodeId, NodeId, bool)>,
}

impl Loader<'_> {
    /// The node of the named type: a placeholder filled later on its first mention.
    fn id_of(&mut self, name: &str) -> Result<NodeId, String> {
        if let Some(&id) = self.ids.get(name) {
            return Ok(id);
        }
        let (&name, _) = self
            .table
            .types
            .get_key_value(name)
            .ok_or_else(|| format!("unknown type {name}"))?;
        let id = self.set.push(Node::Untyped);
        self.ids.insert(name, id);
        self.pending.push((name, id));
        Ok(id)
    }

    /// The struct a type's definition declares.
    fn struct_node(&mut self, name: &str) -> Result<MapNode, String> {
        let line = self
            .table
            .types
            .get(name)
            .ok_or_else(|| format!("unknown type {name}"))?;
        let (_, def): (serde::de::IgnoredAny, Value) =
            serde_json::from_str(line).map_err(|e| format!("{name}: {e}"))?;
        let fields = def
            .get("f")
            .and_then(Value::as_object)
            .ok_or_else(|| format!("{name}: no f"))?;
        let mut node = MapNode {
            atomic: def.get("atomic").and_then(Value::as_bool).unwrap_or(false),
            ..MapNode::default()
        };
        for (fname, spec) in fields {
            let strategy = spec.get("ps").and_then(Value::as_str).unwrap_or("");
            let smp = Smp {
                merge: strategy.split(',').any(|s| s == "merge"),
                replace: strategy.split(',').any(|s| s == "replace"),
                retain_keys: strategy.split(',').any(|s| s == "retainKeys"),
                merge_key: spec.get("mk").and_then(Value::as_str).map(str::to_string),
            };
            let t = spec
                .get("t")
                .ok_or_else(|| format!("{name}.{fname}: no t"))?;
            let ty = self.type_expr(t, &smp)?;
            node.fields.insert(
                fname.clone(),
                Field {
                    ty,
                    smp,
                    default: spec.get("d").cloned(),
                },
            );
        }
        Ok(node)
    }

    fn type_expr(&mut self, t: &Value, smp: &Smp) -> Result<NodeId, String> {
        match t {
            Value::String(s) if s == "scalar" => Ok(SCALAR),
            Value::String(s) if s == "untyped" => Ok(UNTYPED),
            Value::String(s) => self.id_of(s),
            Value::Object(o) => {
                if let Some(item) = o.get("list") {
                    let items = self.type_expr(item, &Smp::default())?;
                    let keys = || -> Vec<String> {
                        o.get("keys")
                            .and_then(Value::as_array)
                            .map(|k| {
                                k.iter()
                                    .filter_map(Value::as_str)
                                    .map(str::to_string)
                                    .collect()
                            })
                            .unwrap_or_default()
                    };
                    let kind = match o.get("listType").and_then(Value::as_str) {
                        Some("map") => ListKind::Map(keys()),
                        Some("set") => ListKind::Set,
                        Some(_) => ListKind::Atomic,
                        // No marker: the OpenAPI-to-SSA conversion follows the patch strategy.
                        None if smp.merge => match &smp.merge_key {
                            Some(k) => ListKind::Map(vec![k.clone()]),
                            None => ListKind::Set,
                        },
                        None => ListKind::Atomic,
                    };
                    return Ok(self.set.push(Node::List { items, kind }));
                }
                if let Some(values) = o.get("map") {
                    let elem = self.type_expr(values, &Smp::default())?;
                    let atomic = o.get("atomic").and_then(Value::as_bool).unwrap_or(false);
                    let node = MapNode {
                        fields: HashMap::new(),
                        elem: Some(elem),
                        atomic,
                    };
                    return Ok(self.set.push(Node::Map(node)));
                }
                if let Some(Value::String(r)) = o.get("ref") {
                    let base = self.id_of(r)?;
                    let atomic = o.get("atomic").and_then(Value::as_bool).unwrap_or(false);
                    let slot = self.set.push(Node::Untyped);
                    self.overrides.push((slot, base, atomic));
                    return Ok(slot);
                }
                Err(format!("bad type expression {t}"))
            }
            other => Err(format!("bad type expression {other}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn builtin_table_loads() {
        let table = TABLE.as_ref();
        assert!(table.is_ok(), "{:?}", table.err());
        for &name in table.iter().flat_map(|t| t.types.keys()) {
            assert!(builtin_type(name).is_some(), "{name}");
        }
    }

    #[test]
    fn a_builtin_kind_holds_only_the_types_it_reaches() {
        let Some(config_map) = ObjectType::builtin("", "ConfigMap") else {
            panic!("ConfigMap is built in")
        };
        let Some(pod) = ObjectType::builtin("", "Pod") else {
            panic!("Pod is built in")
        };
        // ConfigMap: itself, ObjectMeta, ManagedFieldsEntry, OwnerReference, FieldsV1, Time…
        assert!(
            config_map.set.nodes.len() < 30,
            "{}",
            config_map.set.nodes.len()
        );
        assert!(pod.set.nodes.len() > 200, "{}", pod.set.nodes.len());
        let again = ObjectType::builtin("", "ConfigMap").map(|t| t.set);
        assert!(again.is_some_and(|set| Arc::ptr_eq(&set, &config_map.set)));
    }

    fn path<'a>(t: TypeRef<'a>, steps: &[&str]) -> TypeRef<'a> {
        steps
            .iter()
            .fold(t, |t, s| if *s == "[]" { t.items() } else { t.field(s).0 })
    }

    #[test]
    fn builtin_list_kinds_follow_markers_and_patch_strategy() {
        let Some(deploy) = ObjectType::builtin("apps", "Deployment") else {
            panic!("Deployment is built in")
        };
        let spec = ["spec", "template", "spec"];
        let containers = path(deploy.root(), &spec).field("containers");
        assert_eq!(
            containers.0.list_kind(),
            &ListKind::Map(vec!["name".into()])
        );
        let smp = containers.1.map(|f| f.smp.clone()).unwrap_or_default();
        assert!(smp.merge);
        assert_eq!(smp.merge_key.as_deref(), Some("name"));
        let ports = path(
            deploy.root(),
            &["spec", "template", "spec", "containers", "[]", "ports"],
        );
        assert_eq!(
            ports.list_kind(),
            &ListKind::Map(vec!["containerPort".into(), "protocol".into()])
        );
        assert_eq!(ports.items().field_default("protocol"), Some(&json!("TCP")));
        let tolerations = path(deploy.root(), &["spec", "template", "spec", "tolerations"]);
        assert_eq!(tolerations.list_kind(), &ListKind::Atomic);
        let finalizers = path(deploy.root(), &["metadata", "finalizers"]);
        assert_eq!(finalizers.list_kind(), &ListKind::Set);
        assert!(path(deploy.root(), &["spec", "selector"]).map_is_atomic());
        assert!(!path(deploy.root(), &["metadata", "labels"]).map_is_atomic());
        assert!(deploy.root().has_field("spec"));
        assert!(!path(deploy.root(), &["metadata", "labels"]).has_field("app"));
    }

    #[test]
    fn every_served_kind_is_built_in() {
        for (g, k) in [
            ("", "Namespace"),
            ("", "Secret"),
            ("", "ConfigMap"),
            ("", "ServiceAccount"),
            ("", "Event"),
            ("", "Node"),
            ("", "Pod"),
            ("", "Service"),
            ("apps", "Deployment"),
            ("apps", "ReplicaSet"),
            ("apps", "StatefulSet"),
            ("apps", "DaemonSet"),
            ("batch", "Job"),
            ("coordination.k8s.io", "Lease"),
            ("events.k8s.io", "Event"),
            ("certificates.k8s.io", "CertificateSigningRequest"),
            ("rbac.authorization.k8s.io", "Role"),
            ("rbac.authorization.k8s.io", "ClusterRole"),
            ("rbac.authorization.k8s.io", "RoleBinding"),
            ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
            ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ] {
            assert!(supports_strategic_merge_patch(g, k), "{g}/{k}");
        }
        assert!(!supports_strategic_merge_patch("example.com", "Widget"));
    }

    #[test]
    fn crd_schema_conversion() {
        let schema = json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "items": {
                            "type": "array",
                            "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["name"],
                            "items": {"type": "object", "properties": {"name": {"type": "string"}}}
                        },
                        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                        "args": {"type": "array", "items": {"type": "string"}},
                        "selector": {"type": "object", "x-kubernetes-map-type": "atomic",
                                     "additionalProperties": {"type": "string"}},
                        "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        "port": {"x-kubernetes-int-or-string": true}
                    }
                }
            }
        });
        let t = ObjectType::from_crd_schema(&schema);
        let spec = t.root().field("spec").0;
        assert_eq!(
            spec.field("items").0.list_kind(),
            &ListKind::Map(vec!["name".into()])
        );
        assert_eq!(spec.field("tags").0.list_kind(), &ListKind::Set);
        assert_eq!(spec.field("args").0.list_kind(), &ListKind::Atomic);
        assert!(spec.field("selector").0.map_is_atomic());
        assert!(matches!(
            spec.field("raw").0.field("anything").0.node(),
            Node::Untyped
        ));
        assert!(matches!(spec.field("port").0.node(), Node::Scalar));
        let meta = t.root().field("metadata").0;
        assert_eq!(
            meta.field("ownerReferences").0.list_kind(),
            &ListKind::Map(vec!["uid".into()])
        );
        assert!(t.root().has_field("apiVersion"));
    }
}
