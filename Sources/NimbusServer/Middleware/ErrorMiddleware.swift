import Foundation
import Hummingbird
import NimbusCore
import NimbusStore

/// Turns every error into the wire's error body, `{uuid, serverErrorCode, reason, retryAfter?}`.
///
/// Internal failures are logged with their uuid and answered with `INTERNAL_ERROR` and that uuid only:
/// no SQL, paths or stack traces reach a client.
///
/// A `redirectURL` (where to sign in) is made absolute against the server's public address, since a
/// client resolves it against whatever page it is on, not against the API.
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    let publicURL: String?
    let tls: Bool

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response
    {
        do {
            return try await next(request, context)
        } catch {
            var wireError = Self.wireError(for: error, request: request)
            if let redirect = wireError.redirectURL, redirect.hasPrefix("/") {
                wireError.redirectURL = PublicURL.base(for: request, configured: publicURL, tls: tls) + redirect
            }
            // A full disk is the operator's to fix, though clients only need to wait.
            if wireError.code == .internalError || (error as? StoreError) == .storageFull
                || (error as? StoreError) == .unavailable || error is S3Error
            {
                context.logger.error(
                    "request failed",
                    metadata: [
                        "uuid": "\(wireError.uuid)", "error": "\(String(reflecting: error))",
                        "path": "\(request.uri.path)",
                    ])
            }
            return Self.response(for: wireError)
        }
    }

    static func wireError(for error: any Error, request: Request) -> NimbusError {
        switch error {
        case let error as NimbusError: return error
        case StoreError.duplicate(let what): return NimbusError(.exists, "\(what) already exists")
        case StoreError.missing(let what): return .notFound("\(what) does not exist")
        case StoreError.storageFull:
            return NimbusError(
                .tryAgainLater, "the server's storage is full, so nothing was written; try again later", retryAfter: 60)
        case StoreError.unstorableText:
            return .badRequest("a text value holds a NUL character, which this server's database cannot store")
        case StoreError.unavailable:
            return NimbusError(
                .tryAgainLater,
                "the server cannot reach its database; try again shortly (a write under way when it was lost may have been kept)",
                retryAfter: 2)
        case let error as S3Error:
            // The operator's to fix or the store's to recover from; the client is told to wait, with the
            // store's code but not its address (logged above).
            return NimbusError(
                .tryAgainLater, "the server cannot use its blob storage (\(error.code)); try again shortly", retryAfter: 5)
        case let error as HTTPResponseError:
            switch error.status.code {
            case 404: return .notFound("no route \(request.method) \(request.uri.path)")
            case 405: return NimbusError(.methodNotAllowed, "\(request.method) is not served on \(request.uri.path)")
            case 413: return NimbusError(.requestTooLarge, "the request body is too large")
            case 400..<500: return .badRequest("the request is malformed")
            default: return NimbusError(.internalError, "the server failed; quote this error's uuid when reporting it")
            }
        default: return NimbusError(.internalError, "the server failed; quote this error's uuid when reporting it")
        }
    }

    static func response(for error: NimbusError) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        if let retryAfter = error.retryAfter { headers[.retryAfter] = String(retryAfter) }
        let body = (try? JSONEncoder().encode(error)) ?? Data()
        return Response(
            status: HTTPResponse.Status(code: error.code.httpStatus),
            headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }
}
