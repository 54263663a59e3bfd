import Foundation
import Hummingbird
import Mustache
import NimbusCore

/// The dashboard's pages: Mustache templates and the stylesheet and script, compiled into the binary
/// (SwiftPM's `embedInCode`), so a copied `nimbus` binary serves the whole dashboard.
///
/// Every value is HTML-escaped by Mustache's `{{…}}`; no template uses the unescaped `{{{…}}}` form
/// except for SVG the server drew itself. Pages carry no inline script or style, so the
/// Content-Security-Policy allows neither.
struct DashboardRenderer: Sendable {
    let library: MustacheLibrary

    static let shared = DashboardRenderer()

    private init() {
        let templates: [(String, [UInt8])] = [
            ("layout", PackageResources.layout_mustache),
            ("signin", PackageResources.signin_mustache),
            ("error", PackageResources.error_mustache),
            ("overview", PackageResources.overview_mustache),
            ("schema", PackageResources.schema_mustache),
            ("environment", PackageResources.environment_mustache),
            ("deploy", PackageResources.deploy_mustache),
            ("records", PackageResources.records_mustache),
            ("record", PackageResources.record_mustache),
            ("users", PackageResources.users_mustache),
            ("user", PackageResources.user_mustache),
            ("keyvalue", PackageResources.keyvalue_mustache),
            ("documents", PackageResources.documents_mustache),
            ("folder", PackageResources.folder_mustache),
            ("document", PackageResources.document_mustache),
            ("trash", PackageResources.trash_mustache),
            ("tokens", PackageResources.tokens_mustache),
            ("activity", PackageResources.activity_mustache),
        ]
        var library = MustacheLibrary()
        for (name, bytes) in templates {
            // The templates are part of the binary: one that does not parse is a build mistake.
            try! library.register(String(decoding: bytes, as: UTF8.self), named: name)
        }
        self.library = library
    }

    static let securityHeaders: HTTPFields = [
        .contentSecurityPolicy:
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
            + "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        .init("X-Content-Type-Options")!: "nosniff",
        // Not no-referrer: under it a browser sends `Origin: null` with forms, which the origin check refuses.
        .init("Referrer-Policy")!: "same-origin",
        .init("X-Frame-Options")!: "DENY",
    ]

    func page(_ template: String, _ model: some DashboardPageModel, status: HTTPResponse.Status = .ok) -> Response {
        let html = library.render(model, withTemplate: template) ?? ""
        var headers = Self.securityHeaders
        headers[.contentType] = "text/html; charset=utf-8"
        headers[.cacheControl] = "no-store"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    /// The stylesheet or script, cacheable: their URLs carry the build's digest of them.
    static func asset(_ name: String) -> Response? {
        let (bytes, type): ([UInt8], String)
        switch name {
        case "dashboard.css": (bytes, type) = (PackageResources.dashboard_css, "text/css; charset=utf-8")
        case "dashboard.js": (bytes, type) = (PackageResources.dashboard_js, "text/javascript; charset=utf-8")
        default: return nil
        }
        var headers = securityHeaders
        headers[.contentType] = type
        headers[.cacheControl] = "public, max-age=31536000, immutable"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// A short digest of the assets, in their URLs, so a new build's are fetched anew.
    static let assetVersion = String(
        Secrets.digest(String(decoding: PackageResources.dashboard_css + PackageResources.dashboard_js, as: UTF8.self)).prefix(12)
    )

    static func redirect(to location: String) -> Response {
        var headers = securityHeaders
        headers[.location] = location
        headers[.cacheControl] = "no-store"
        return Response(status: .seeOther, headers: headers)
    }
}

/// What every page's template reads besides its own content: the layout's navigation and messages.
protocol DashboardPageModel: Sendable {
    var chrome: DashboardChrome { get }
}

/// The layout around a page: title, who is signed in, navigation, the form token, and a message.
struct DashboardChrome: Sendable {
    var title: String
    var email: String?
    var isAdministrator = false
    var csrf = ""
    // Flags rather than computed properties: Mustache reads stored properties only.
    var inOverview = false
    var inUsers = false
    var inKeyValue = false
    var inDocuments = false
    var inTokens = false
    var inActivity = false
    var error: String?
    var notice: String?
    var assetVersion = DashboardRenderer.assetVersion

    init(title: String, viewer: DashboardViewer?, section: String = "", error: String? = nil, notice: String? = nil) {
        self.title = title
        email = viewer?.account.email
        isAdministrator = viewer?.isAdministrator ?? false
        csrf = viewer?.csrfToken ?? ""
        inOverview = section == "overview"
        inUsers = section == "users"
        inKeyValue = section == "keyvalue"
        inDocuments = section == "documents"
        inTokens = section == "tokens"
        inActivity = section == "activity"
        self.error = error
        self.notice = notice
    }
}
