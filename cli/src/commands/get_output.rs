//! What every `ocm get` shares with kubectl: `-o wide|yaml|json`, `-n` / `-A` for namespaced
//! kinds (with a leading NAMESPACE column under `-A`), and for yaml and json the objects as
//! the server returned them, wrapped in a `List` (`apiVersion: v1`, `kind: List`, `items`).

use anyhow::Context;
use clap::{Args, ValueEnum};
use kube::api::{Api, ApiResource, DynamicObject, ListParams, TypeMeta};
use serde::Serialize;
use serde_json::{Value, json};

/// The `-o` of `ocm get`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// The table with more columns.
    Wide,
    /// A `List` of the objects in YAML.
    Yaml,
    /// A `List` of the objects in JSON.
    Json,
}

/// The `-o/--output` flag.
#[derive(Debug, Clone, Copy, Args)]
pub struct OutputFlag {
    /// Output format (default: a table): wide (more columns), yaml or json (a `List` of the
    /// objects, as kubectl prints them).
    #[arg(short = 'o', long, value_enum)]
    pub output: Option<OutputFormat>,
}

/// Which namespaces a namespaced `ocm get` lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// One namespace.
    Namespace(String),
    /// Every namespace (`-A`).
    All,
}

/// `-n` / `-A` of kinds in ordinary namespaces (placements, decisions).
#[derive(Debug, Clone, Args)]
pub struct NamespaceFlags {
    /// Namespace (default: the kubeconfig context's namespace, else `default`).
    #[arg(short = 'n', long)]
    namespace: Option<String>,
    /// Every namespace (wins over `-n`, as in kubectl); the table gets a leading NAMESPACE
    /// column.
    #[arg(short = 'A', long)]
    all_namespaces: bool,
}

impl NamespaceFlags {
    /// The scope as kubectl picks it: `-A`, `-n`, the context's namespace, else `default`.
    pub fn scope(&self, context_namespace: Option<String>) -> Scope {
        if self.all_namespaces {
            return Scope::All;
        }
        Scope::Namespace(
            self.namespace
                .clone()
                .or(context_namespace)
                .unwrap_or_else(|| "default".to_owned()),
        )
    }
}

/// `-n` / `-A` of kinds that live in cluster namespaces (works, addons): `--cluster` is the
/// same flag as `-n`.
#[derive(Debug, Clone, Args)]
pub struct ClusterNamespaceFlags {
    /// The cluster (its namespace on the hub; default: the kubeconfig context's namespace if
    /// it names one, else every cluster).
    #[arg(
        short = 'n',
        long = "namespace",
        visible_alias = "cluster",
        value_name = "CLUSTER"
    )]
    namespace: Option<String>,
    /// Every cluster (wins over `-n`, as in kubectl); the table gets a leading NAMESPACE
    /// column.
    #[arg(short = 'A', long)]
    all_namespaces: bool,
}

impl ClusterNamespaceFlags {
    /// The scope: `-A`, `-n`/`--cluster`, the context's namespace, else every cluster (no
    /// cluster is called `default`, so kubectl's default would always list nothing).
    pub fn scope(&self, context_namespace: Option<String>) -> Scope {
        if self.all_namespaces {
            return Scope::All;
        }
        match self.namespace.clone().or(context_namespace) {
            Some(namespace) => Scope::Namespace(namespace),
            None => Scope::All,
        }
    }
}

impl Scope {
    /// Whether the table gets a NAMESPACE column.
    pub fn is_all(&self) -> bool {
        matches!(self, Scope::All)
    }

    /// What to print when nothing is found: `No <what> found.` or `… in namespace N.`.
    pub fn nothing_found(&self, what: &str) -> String {
        format!("No {what} found{}.", self.location())
    }

    /// ` in namespace N`, or nothing for every namespace.
    pub fn location(&self) -> String {
        match self {
            Scope::All => String::new(),
            Scope::Namespace(ns) => format!(" in namespace {ns}"),
        }
    }
}

/// How a table is drawn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableStyle {
    /// A leading NAMESPACE column (`-A`).
    pub namespace_column: bool,
    /// The extra columns of `-o wide`.
    pub wide: bool,
}

impl TableStyle {
    /// The style for `scope` and `-o`.
    pub fn new(scope: &Scope, output: Option<OutputFormat>) -> TableStyle {
        TableStyle {
            namespace_column: scope.is_all(),
            wide: output == Some(OutputFormat::Wide),
        }
    }
}

/// One table row: the object's namespace and its own cells.
#[derive(Debug, Clone)]
pub struct Row {
    /// Shown in the NAMESPACE column, if the table has one.
    pub namespace: String,
    /// The other cells, in header order.
    pub cells: Vec<String>,
}

/// The table kubectl prints: `headers` over `rows`, with a leading NAMESPACE column when
/// `namespace_column`.
pub fn render_table(headers: &[&str], rows: Vec<Row>, namespace_column: bool) -> String {
    if !namespace_column {
        let cells: Vec<Vec<String>> = rows.into_iter().map(|r| r.cells).collect();
        return ocm_runtime::text_table::render(headers, &cells);
    }
    let headers: Vec<&str> = std::iter::once("NAMESPACE")
        .chain(headers.iter().copied())
        .collect();
    let cells: Vec<Vec<String>> = rows
        .into_iter()
        .map(|r| std::iter::once(r.namespace).chain(r.cells).collect())
        .collect();
    ocm_runtime::text_table::render(&headers, &cells)
}

/// The objects of kind `K` in `scope` matching `params`, as the server returned them (with
/// `apiVersion` and `kind`, without `managedFields`, as kubectl shows them), sorted by
/// namespace and name. Cluster-scoped kinds take [`Scope::All`].
pub async fn list_objects<K>(
    client: &kube::Client,
    scope: &Scope,
    params: &ListParams,
) -> anyhow::Result<Vec<DynamicObject>>
where
    K: kube::Resource<DynamicType = ()>,
{
    let resource = ApiResource::erase::<K>(&());
    let api: Api<DynamicObject> = match scope {
        Scope::All => Api::all_with(client.clone(), &resource),
        Scope::Namespace(ns) => Api::namespaced_with(client.clone(), ns, &resource),
    };
    let mut items = api
        .list(params)
        .await
        .with_context(|| format!("listing {}", resource.plural))?
        .items;
    for item in &mut items {
        item.types.get_or_insert_with(|| TypeMeta {
            api_version: resource.api_version.clone(),
            kind: resource.kind.clone(),
        });
        item.metadata.managed_fields = None;
    }
    items.sort_by(|a, b| {
        (&a.metadata.namespace, &a.metadata.name).cmp(&(&b.metadata.namespace, &b.metadata.name))
    });
    Ok(items)
}

/// Lists kind `K` in `scope` and prints it in the `-o` format ([`print_objects`]);
/// `render` draws the table of the objects as their Rust type.
pub async fn get_and_print<K>(
    client: &kube::Client,
    scope: &Scope,
    params: &ListParams,
    output: Option<OutputFormat>,
    render: impl FnOnce(&[K], TableStyle) -> String,
    nothing: &str,
) -> anyhow::Result<()>
where
    K: kube::Resource<DynamicType = ()> + serde::de::DeserializeOwned,
{
    let objects = list_objects::<K>(client, scope, params).await?;
    let style = TableStyle::new(scope, output);
    let table = || Ok(render(&typed::<K>(&objects)?, style));
    print_objects(&objects, output, table, nothing)
}

/// The objects as their Rust type, for the table.
pub fn typed<K: serde::de::DeserializeOwned>(objects: &[DynamicObject]) -> anyhow::Result<Vec<K>> {
    objects
        .iter()
        .map(|o| {
            let value = serde_json::to_value(o)?;
            serde_json::from_value(value).with_context(|| {
                format!(
                    "reading {}",
                    o.metadata.name.as_deref().unwrap_or("an object")
                )
            })
        })
        .collect()
}

/// kubectl's `List` of `items`: `apiVersion`, `items`, `kind`, `metadata` in its key order.
pub fn list_document<T: Serialize>(items: &[T]) -> anyhow::Result<Value> {
    Ok(json!({
        "apiVersion": "v1",
        "items": serde_json::to_value(items).context("encoding the objects")?,
        "kind": "List",
        "metadata": {"resourceVersion": ""},
    }))
}

/// `document` as `-o json` (indented by four, as kubectl) or `-o yaml` prints it; `None`
/// for the table formats.
pub fn format_document(document: &Value, output: OutputFormat) -> anyhow::Result<Option<String>> {
    match output {
        OutputFormat::Json => {
            let mut out = Vec::new();
            let formatter = serde_json::ser::PrettyFormatter::with_indent(b"    ");
            let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
            document
                .serialize(&mut serializer)
                .context("encoding JSON")?;
            let text = String::from_utf8(out).context("encoding JSON")?;
            Ok(Some(text + "\n"))
        }
        OutputFormat::Yaml => {
            let mut text = serde_saphyr::to_string(document).context("encoding YAML")?;
            if !text.ends_with('\n') {
                text.push('\n');
            }
            Ok(Some(text))
        }
        OutputFormat::Wide => Ok(None),
    }
}

/// Prints `objects` in the `-o` format: a `List` for yaml and json (also when empty), else
/// the table `table(style)` draws, or, when there is nothing, `nothing` on stderr (as
/// kubectl's `No resources found`), leaving stdout empty.
pub fn print_objects(
    objects: &[DynamicObject],
    output: Option<OutputFormat>,
    table: impl FnOnce() -> anyhow::Result<String>,
    nothing: &str,
) -> anyhow::Result<()> {
    if let Some(format) = output
        && let Some(text) = format_document(&list_document(objects)?, format)?
    {
        print!("{text}");
        return Ok(());
    }
    if objects.is_empty() {
        eprintln!("{nothing}");
    } else {
        print!("{}", table()?);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Placements {
        #[command(flatten)]
        namespaces: NamespaceFlags,
        #[command(flatten)]
        output: OutputFlag,
    }

    #[derive(Debug, Parser)]
    struct Works {
        #[command(flatten)]
        namespaces: ClusterNamespaceFlags,
    }

    fn placements(args: &[&str]) -> Result<Placements, clap::Error> {
        Placements::try_parse_from(std::iter::once("get").chain(args.iter().copied()))
    }

    fn works_scope(args: &[&str], context: Option<&str>) -> Scope {
        Works::try_parse_from(std::iter::once("get").chain(args.iter().copied()))
            .unwrap()
            .namespaces
            .scope(context.map(str::to_owned))
    }

    #[test]
    fn namespace_flags_pick_the_scope_as_kubectl() {
        let scope = |args: &[&str], context: Option<&str>| {
            placements(args)
                .unwrap()
                .namespaces
                .scope(context.map(str::to_owned))
        };
        assert_eq!(scope(&[], None), Scope::Namespace("default".into()));
        assert_eq!(scope(&[], Some("team")), Scope::Namespace("team".into()));
        assert_eq!(
            scope(&["-n", "apps"], Some("team")),
            Scope::Namespace("apps".into())
        );
        assert_eq!(scope(&["-A"], Some("team")), Scope::All);
        assert_eq!(scope(&["--all-namespaces"], None), Scope::All);
        // As in kubectl, -A wins over -n.
        assert_eq!(scope(&["-n", "apps", "-A"], None), Scope::All);
    }

    #[test]
    fn cluster_namespaces_default_to_every_cluster_and_take_cluster_as_n() {
        assert_eq!(works_scope(&[], None), Scope::All);
        assert_eq!(works_scope(&[], Some("c9")), Scope::Namespace("c9".into()));
        assert_eq!(
            works_scope(&["--cluster", "c1"], None),
            Scope::Namespace("c1".into())
        );
        assert_eq!(
            works_scope(&["-n", "c2"], None),
            Scope::Namespace("c2".into())
        );
        assert_eq!(works_scope(&["-A"], Some("c9")), Scope::All);
    }

    #[test]
    fn unknown_output_formats_name_the_accepted_ones() {
        let err = placements(&["-o", "foo"]).unwrap_err().to_string();
        for accepted in ["wide", "yaml", "json"] {
            assert!(err.contains(accepted), "{err}");
        }
        assert_eq!(
            placements(&["-o", "yaml"]).unwrap().output.output,
            Some(OutputFormat::Yaml)
        );
    }

    #[test]
    fn all_namespaces_adds_a_leading_namespace_column() {
        let rows = vec![
            Row {
                namespace: "apps".into(),
                cells: vec!["p1".into(), "2".into()],
            },
            Row {
                namespace: "default".into(),
                cells: vec!["p2".into(), "10".into()],
            },
        ];
        assert_eq!(
            render_table(&["NAME", "SELECTED"], rows.clone(), true),
            "NAMESPACE   NAME   SELECTED\napps        p1     2\ndefault     p2     10\n"
        );
        assert_eq!(
            render_table(&["NAME", "SELECTED"], rows, false),
            "NAME   SELECTED\np1     2\np2     10\n"
        );
    }

    #[test]
    fn lists_are_kubectl_lists_in_json_and_yaml() {
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
            "metadata": {"name": "p", "namespace": "apps"}, "spec": {"clusterSets": ["a"]}
        }))
        .unwrap();
        let document = list_document(&[object]).unwrap();
        let json_text = format_document(&document, OutputFormat::Json)
            .unwrap()
            .unwrap();
        assert!(
            json_text.starts_with("{\n    \"apiVersion\": \"v1\",\n    \"items\": ["),
            "{json_text}"
        );
        let parsed: Value = serde_json::from_str(&json_text).unwrap();
        assert_eq!(parsed["kind"], "List");
        assert_eq!(parsed["items"][0]["kind"], "Placement");
        assert_eq!(parsed["items"][0]["metadata"]["namespace"], "apps");
        let yaml_text = format_document(&document, OutputFormat::Yaml)
            .unwrap()
            .unwrap();
        assert!(yaml_text.starts_with("apiVersion: v1\n"), "{yaml_text}");
        assert!(
            yaml_text.ends_with("resourceVersion: \"\"\n"),
            "{yaml_text}"
        );
        let from_yaml: Value = serde_saphyr::from_str(&yaml_text).unwrap();
        assert_eq!(from_yaml, parsed);
        assert_eq!(
            format_document(&document, OutputFormat::Wide).unwrap(),
            None
        );
        let empty = list_document::<Value>(&[]).unwrap();
        assert_eq!(empty["items"], json!([]));
    }
}
