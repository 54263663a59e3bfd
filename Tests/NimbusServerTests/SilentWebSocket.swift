import Foundation
#if canImport(Glibc)
    import Glibc
#endif

/// A WebSocket peer that completes the upgrade and then goes silent: it never answers a ping, like a
/// phone that lost its network without closing the connection.
final class SilentWebSocket {
    private let descriptor: Int32

    init(port: Int, sessionToken: String) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw POSIXError(.ECONNREFUSED) }
        let request =
            "GET /push/1 HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
            + "Authorization: Bearer \(sessionToken)\r\n\r\n"
        _ = request.withCString { send(descriptor, $0, strlen($0), 0) }
        var buffer = [UInt8](repeating: 0, count: 1024)
        let count = recv(descriptor, &buffer, buffer.count, 0)
        guard count > 0, String(decoding: buffer.prefix(count), as: UTF8.self).hasPrefix("HTTP/1.1 101") else {
            throw POSIXError(.EPROTO)
        }
    }

    func close() { _ = Glibc.close(descriptor) }
}
