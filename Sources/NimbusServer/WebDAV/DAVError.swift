import Foundation
import HTTPTypes
import Hummingbird
import NimbusCore
import NimbusStore

/// A WebDAV answer other than success: the status a client acts on (RFC 4918's 207, 412, 423, 424, 507
/// among them), the stable code and reason every Nimbus error carries, and for the RFC's named
/// preconditions the element a client can match (`<D:lock-token-submitted/>`).
struct DAVError: Error, Sendable {
    var status: HTTPResponse.Status
    var error: NimbusError
    var condition: String?
    var headers = HTTPFields()

    init(_ status: HTTPResponse.Status, _ code: ErrorCode, _ reason: String, condition: String? = nil) {
        self.status = status
        self.error = NimbusError(code, reason)
        self.condition = condition
    }

    static func notFound(_ reason: String) -> DAVError { DAVError(.notFound, .notFound, reason) }
    static func conflict(_ reason: String) -> DAVError { DAVError(.conflict, .conflict, reason) }
    static func badRequest(_ reason: String) -> DAVError { DAVError(.badRequest, .badRequest, reason) }
    static func preconditionFailed(_ reason: String) -> DAVError {
        DAVError(.preconditionFailed, .preconditionFailed, reason)
    }
    static func methodNotAllowed(_ reason: String) -> DAVError {
        DAVError(.methodNotAllowed, .methodNotAllowed, reason)
    }
    static func locked(_ reason: String) -> DAVError {
        DAVError(HTTPResponse.Status(code: 423, reasonPhrase: "Locked"), .locked, reason, condition: "lock-token-submitted")
    }

    static let insufficientStorage = HTTPResponse.Status(code: 507, reasonPhrase: "Insufficient Storage")
    static let multiStatus = HTTPResponse.Status(code: 207, reasonPhrase: "Multi-Status")
    static let failedDependency = HTTPResponse.Status(code: 424, reasonPhrase: "Failed Dependency")

    /// The WebDAV form of any error a request met: the document service's own errors keep their codes,
    /// a full account is 507 as RFC 4918 has it, a missing sign-in is a Basic challenge.
    static func from(_ error: any Error, request: Request) -> DAVError {
        if let error = error as? DAVError { return error }
        return from(ErrorMiddleware<AppRequestContext>.wireError(for: error, request: request))
    }

    /// The WebDAV form of a Nimbus error: its code's status, but 507 for a full account and 401 for sign-in.
    static func from(_ wire: NimbusError) -> DAVError {
        var status = HTTPResponse.Status(code: wire.code.httpStatus)
        switch wire.code {
        case .quotaExceeded: status = insufficientStorage
        case .authenticationRequired, .authenticationFailed: status = .unauthorized
        default: break
        }
        var converted = DAVError(status, wire.code, wire.reason)
        converted.error = wire
        return converted
    }

    func response(realm: String) -> Response {
        var headers = headers
        if status == .unauthorized { headers[.wwwAuthenticate] = "Basic realm=\"\(realm)\", charset=\"UTF-8\"" }
        if let retryAfter = error.retryAfter { headers[.retryAfter] = String(retryAfter) }
        if let condition {
            headers[.contentType] = "application/xml; charset=utf-8"
            var xml = DAVXMLWriter()
            xml.open("error", attributes: DAVXMLWriter.multistatusOpening)
            xml.raw("<D:\(condition)/>")
            xml.raw("<D:responsedescription>\(DAVXMLWriter.escape(error.reason))</D:responsedescription>")
            xml.close("error")
            return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: xml.text)))
        }
        headers[.contentType] = "application/json; charset=utf-8"
        let body = (try? JSONEncoder().encode(error)) ?? Data()
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }
}
