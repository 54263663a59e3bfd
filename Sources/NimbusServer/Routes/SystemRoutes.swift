import Foundation
import Hummingbird
import NimbusCore
import Prometheus

/// `/health`, `/metrics` and `/openapi.json`.
struct SystemRoutes {
    let metrics: PrometheusCollectorRegistry

    func register(on router: Router<AppRequestContext>) {
        router.get("health") { _, _ in
            Self.response(contentType: "application/json", bytes: Array(#"{"status":"ok"}"#.utf8))
        }
        router.get("metrics") { _, _ in
            Self.response(contentType: "text/plain; version=0.0.4; charset=utf-8", bytes: metrics.emitToBuffer())
        }
        let openAPI = Array((try? OpenAPIDocument.encoded()) ?? Data())
        router.get("openapi.json") { _, _ in Self.response(contentType: "application/json", bytes: openAPI) }
    }

    static func response(contentType: String, bytes: [UInt8]) -> Response {
        Response(status: .ok, headers: [.contentType: contentType], body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}
