import Metrics
import Prometheus

/// The process-wide Prometheus registry behind swift-metrics; bootstrapped once, on first use,
/// because swift-metrics allows one backend per process.
enum ServerMetrics {
    static let registry: PrometheusCollectorRegistry = {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        return registry
    }()
}
