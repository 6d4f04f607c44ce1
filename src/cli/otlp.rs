//! OTLP export of the spans (feature `otlp`): when `OTEL_EXPORTER_OTLP_ENDPOINT` or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set, every `toolwire` span (`gen_ai.chat`,
//! `gen_ai.execute_tool`, the agent turns, `gateway.attempt`, with their `gen_ai.*` fields) is
//! sent as OTLP/HTTP protobuf to that collector, in batches (`OTEL_BSP_*`), with the headers of
//! `OTEL_EXPORTER_OTLP_HEADERS` (or `…_TRACES_HEADERS`) and the service name of
//! `OTEL_SERVICE_NAME` (`toolwire` when unset). What is still queued is sent when the command
//! ends (after `toolwire serve` stops on SIGTERM or Ctrl-C).
//!
//! The gateway's counters (what `GET /metrics` shows: requests, streams and errors per route,
//! per-key requests, tokens and refusals by limit, upstream attempts and fallbacks) go to the
//! same collector as OTLP metrics (`/v1/metrics`, or `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`),
//! cumulative, every `OTEL_METRIC_EXPORT_INTERVAL` milliseconds (60 s when unset) and once more
//! when the command ends.
//!
//! The requests go out through toolwire's own reqwest client (its TLS set-up, no second HTTP
//! stack), driven by a one-thread runtime of the exporter's own: the SDK's batch processor runs
//! on a thread of its own and may export after the command's runtime is gone.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{MetricExporter, SpanExporter, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::Layer;
use tracing_subscriber::registry::LookupSpan;

/// The most bytes of a collector's answer read (an OTLP answer is a few bytes: a partial
/// success at most).
const MAX_ANSWER: usize = 64 * 1024;

/// How long one export request may take, when `OTEL_EXPORTER_OTLP_TIMEOUT` does not say less
/// (the exporter applies that one itself).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The exporter, while the command runs; dropping it sends what is still queued.
pub(crate) struct Otlp {
    provider: SdkTracerProvider,
    /// The metrics' provider (the gateway's counters register with it through [`METERS`]),
    /// when `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT` is set.
    meters: Option<SdkMeterProvider>,
    /// Drives the export requests; dropped after the provider has shut down.
    runtime: Option<tokio::runtime::Runtime>,
}

impl std::fmt::Debug for Otlp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Otlp").finish_non_exhaustive()
    }
}

/// Whether a variable is set to something other than blanks.
fn set(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| !v.trim().is_empty())
}

impl Otlp {
    /// The exporter when `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`
    /// is set; `None` otherwise. A variable the exporter cannot use is said on standard error
    /// and export stays off.
    pub(crate) fn from_env() -> Option<Otlp> {
        if !set("OTEL_EXPORTER_OTLP_ENDPOINT") && !set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            return None;
        }
        match Otlp::start() {
            Ok(otlp) => Some(otlp),
            Err(e) => {
                eprintln!("toolwire: OTLP export is off: {e}");
                None
            }
        }
    }

    fn start() -> Result<Otlp, String> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("toolwire-otlp")
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start its runtime: {e}"))?;
        let client = toolwire::client::http_client_builder()
            .timeout(REQUEST_TIMEOUT)
            .build()
            .map_err(|e| format!("cannot build its HTTP client: {e}"))?;
        let client = Spawned {
            client,
            runtime: runtime.handle().clone(),
        };
        let span_client = Spawned {
            client: client.client.clone(),
            runtime: runtime.handle().clone(),
        };
        // The endpoint, headers, timeout and compression come from the OTEL_EXPORTER_OTLP_*
        // variables, read by the exporter.
        let exporter = SpanExporter::builder()
            .with_http()
            .with_http_client(span_client)
            .build()
            .map_err(|e| e.to_string())?;
        let mut resource = Resource::builder();
        if !set("OTEL_SERVICE_NAME")
            && !std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|v| {
                v.split(',')
                    .any(|kv| kv.trim().starts_with("service.name="))
            })
        {
            resource = resource.with_service_name("toolwire");
        }
        let resource = resource.build();
        let meters =
            if set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") {
                let metrics = MetricExporter::builder()
                    .with_http()
                    .with_http_client(Spawned {
                        client: client.client.clone(),
                        runtime: runtime.handle().clone(),
                    })
                    .build()
                    .map_err(|e| e.to_string())?;
                Some(
                    SdkMeterProvider::builder()
                        .with_reader(PeriodicReader::builder(metrics).build())
                        .with_resource(resource.clone())
                        .build(),
                )
            } else {
                None
            };
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build();
        if let Ok(mut slot) = METERS.lock() {
            slot.clone_from(&meters);
        }
        Ok(Otlp {
            provider,
            meters,
            runtime: Some(runtime),
        })
    }

    /// The layer that turns `tracing` spans into OpenTelemetry spans for this exporter.
    pub(crate) fn layer<S>(&self) -> impl Layer<S> + use<S>
    where
        S: tracing::Subscriber + for<'a> LookupSpan<'a>,
    {
        tracing_opentelemetry::layer().with_tracer(self.provider.tracer("toolwire"))
    }
}

impl Drop for Otlp {
    fn drop(&mut self) {
        // Sends what is queued and waits for it (bounded by the export timeout); the metrics
        // are collected once more and sent.
        if let Ok(mut slot) = METERS.lock() {
            *slot = None;
        }
        if let Some(meters) = &self.meters
            && let Err(e) = meters.shutdown()
        {
            eprintln!("toolwire: OTLP metrics export at exit: {e}");
        }
        if let Err(e) = self.provider.shutdown() {
            eprintln!("toolwire: OTLP export at exit: {e}");
        }
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_timeout(Duration::from_secs(1));
        }
    }
}

/// The metrics' provider while an [`Otlp`] exports: where [`export_gateway_metrics`] registers.
static METERS: std::sync::Mutex<Option<SdkMeterProvider>> = std::sync::Mutex::new(None);

/// Exports the gateway's counters as OTLP metrics when OTLP export is on (nothing otherwise):
/// one observable instrument per metric (a counter, or a gauge for a value now), its series
/// read from `metrics` at each collection, their labels as attributes.
pub(crate) fn export_gateway_metrics(metrics: toolwire::server::GatewayMetrics) {
    let Some(provider) = METERS.lock().ok().and_then(|slot| slot.clone()) else {
        return;
    };
    let meter = provider.meter("toolwire");
    let observed = move |name: &str| {
        metrics
            .samples()
            .into_iter()
            .filter(|s| s.name == name)
            .map(|s| {
                let attributes: Vec<KeyValue> = s
                    .labels
                    .into_iter()
                    .map(|(k, v)| KeyValue::new(k, v))
                    .collect();
                (s.value, attributes)
            })
            .collect::<Vec<_>>()
    };
    for (name, help, gauge) in toolwire::server::GatewayMetrics::declared() {
        let observed = observed.clone();
        // The SDK keeps the instrument (and its callback) for the provider's life.
        if gauge {
            let _ = meter
                .u64_observable_gauge(name)
                .with_description(help)
                .with_callback(move |o| {
                    for (value, attributes) in observed(name) {
                        o.observe(value, &attributes);
                    }
                })
                .build();
        } else {
            let _ = meter
                .u64_observable_counter(name)
                .with_description(help)
                .with_callback(move |o| {
                    for (value, attributes) in observed(name) {
                        o.observe(value, &attributes);
                    }
                })
                .build();
        }
    }
}

/// toolwire's reqwest client, each request spawned on the exporter's runtime: the SDK's batch
/// thread awaits it without a tokio runtime of its own.
#[derive(Debug)]
struct Spawned {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

impl HttpClient for Spawned {
    fn send_bytes<'a, 'b>(
        &'a self,
        request: Request<Bytes>,
    ) -> Pin<Box<dyn Future<Output = Result<Response<Bytes>, HttpError>> + Send + 'b>>
    where
        'a: 'b,
        Self: 'b,
    {
        let client = self.client.clone();
        let task = self.runtime.spawn(async move {
            let request = reqwest::Request::try_from(request)?;
            let mut response = client.execute(request).await?;
            let mut answer = http::Response::builder().status(response.status());
            if let Some(headers) = answer.headers_mut() {
                *headers = response.headers().clone();
            }
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await? {
                if body.len() + chunk.len() > MAX_ANSWER {
                    return Err(format!("the collector's answer is over {MAX_ANSWER} bytes").into());
                }
                body.extend_from_slice(&chunk);
            }
            Ok::<_, HttpError>(answer.body(Bytes::from(body))?)
        });
        Box::pin(async move { task.await? })
    }
}
