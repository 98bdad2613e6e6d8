//! Read access to the schema tree for server-side apply: list types, map types, children.

use super::node::Node;

/// How a list merges under server-side apply (`x-kubernetes-list-type`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListType {
    /// Replaced as a whole (the default for lists without `x-kubernetes-list-type`).
    Atomic,
    /// A set of scalars: each value is owned separately.
    Set,
    /// A map keyed by the given item fields (`x-kubernetes-list-map-keys`).
    Map(Vec<String>),
}

/// How an object merges under server-side apply (`x-kubernetes-map-type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapType {
    /// Each field is owned separately (the default).
    Granular,
    /// Replaced as a whole.
    Atomic,
}

/// A node of a [`super::StructuralSchema`]: a property, list item or additional-properties
/// schema. Walk it with [`SchemaNode::field`] and [`SchemaNode::items`].
#[derive(Debug, Clone, Copy)]
pub struct SchemaNode<'a> {
    node: &'a Node,
}

impl<'a> SchemaNode<'a> {
    pub(crate) fn new(node: &'a Node) -> Self {
        SchemaNode { node }
    }

    /// The schema of field `name` of an object: its property, else the
    /// `additionalProperties` schema. `None` when the schema does not describe it (under
    /// `x-kubernetes-preserve-unknown-fields` such fields are untyped: lists atomic, maps
    /// granular).
    pub fn field(&self, name: &str) -> Option<SchemaNode<'a>> {
        self.node.field_schema(name).map(SchemaNode::new)
    }

    /// The schema of the items of a list.
    pub fn items(&self) -> Option<SchemaNode<'a>> {
        self.node.items.as_deref().map(SchemaNode::new)
    }

    /// The declared `type` (`""` when absent, e.g. for `x-kubernetes-int-or-string`).
    pub fn type_name(&self) -> &'a str {
        &self.node.type_name
    }

    /// `x-kubernetes-list-type` as declared, or `None`.
    pub fn declared_list_type(&self) -> Option<ListType> {
        match self.node.list_type.as_deref()? {
            "atomic" => Some(ListType::Atomic),
            "set" => Some(ListType::Set),
            "map" => Some(ListType::Map(self.node.list_map_keys.clone())),
            _ => None,
        }
    }

    /// The list type server-side apply uses: the declared one, else atomic.
    pub fn list_type(&self) -> ListType {
        self.declared_list_type().unwrap_or(ListType::Atomic)
    }

    /// The map type server-side apply uses: `x-kubernetes-map-type`, else granular.
    pub fn map_type(&self) -> MapType {
        match self.node.map_type.as_deref() {
            Some("atomic") => MapType::Atomic,
            _ => MapType::Granular,
        }
    }

    /// Whether unknown fields are kept below this node.
    pub fn preserves_unknown_fields(&self) -> bool {
        self.node.preserve_unknown
    }

    /// Whether this node is an embedded Kubernetes object (`x-kubernetes-embedded-resource`).
    pub fn is_embedded_resource(&self) -> bool {
        self.node.embedded
    }

    /// Whether this node is `x-kubernetes-int-or-string`.
    pub fn is_int_or_string(&self) -> bool {
        self.node.int_or_string
    }
}

/// Walk `path` (object field names; list items are stepped into implicitly) from `root`.
pub(crate) fn node_at<'a>(root: &'a Node, path: &[&str]) -> Option<SchemaNode<'a>> {
    let mut cur = SchemaNode::new(root);
    for seg in path {
        while cur.node.items.is_some() {
            cur = cur.items()?;
        }
        cur = cur.field(seg)?;
    }
    Some(cur)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn walks_fields_and_items() {
        let s = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "containers": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {
                    "name": {"type": "string"},
                    "ports": {"type": "array", "items": {"type": "integer"}},
                    "args": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}}}},
            "selector": {"type": "object", "x-kubernetes-map-type": "atomic"},
            "labels": {"type": "object", "additionalProperties": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}}}}}});
        let root = Node::parse(&s, "s", &mut Vec::new());
        let list = |p: &[&str]| {
            node_at(&root, p)
                .filter(|n| n.items().is_some())
                .map(|n| n.list_type())
        };
        assert_eq!(
            list(&["spec", "containers"]),
            Some(ListType::Map(vec!["name".into()]))
        );
        assert_eq!(
            list(&["spec", "containers", "ports"]),
            Some(ListType::Atomic)
        );
        assert_eq!(list(&["spec", "containers", "args"]), Some(ListType::Set));
        assert_eq!(list(&["spec", "labels", "anykey"]), Some(ListType::Set));
        assert_eq!(list(&["spec", "selector"]), None);
        assert_eq!(list(&["spec", "nope"]), None);
        assert_eq!(
            node_at(&root, &["spec", "selector"]).map(|n| n.map_type()),
            Some(MapType::Atomic)
        );
        assert_eq!(
            node_at(&root, &["spec"]).map(|n| n.map_type()),
            Some(MapType::Granular)
        );
        assert_eq!(
            node_at(&root, &["spec", "containers"]).and_then(|n| n.declared_list_type()),
            Some(ListType::Map(vec!["name".into()]))
        );
    }
}
