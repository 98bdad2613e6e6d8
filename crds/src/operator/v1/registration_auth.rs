//! How a managed cluster authenticates to the hub when it registers.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Registration driver: how an agent proves its identity to the hub.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum RegistrationAuthType {
    /// Client certificates issued through Kubernetes CertificateSigningRequests.
    #[default]
    #[serde(rename = "csr")]
    Csr,
    /// AWS IAM roles for service accounts (EKS hubs); no CSR involved.
    #[serde(rename = "awsirsa")]
    AwsIrsa,
    /// Certificates signed through the hub's gRPC server.
    #[serde(rename = "grpc")]
    Grpc,
}
