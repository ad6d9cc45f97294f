#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Where a replicated store's actions live: a PostgreSQL server, the stream's name, and the schema
/// the library keeps its tables in.
///
/// ```swift
/// let stream = try PostgresStream(connection: "postgres://app@db.internal:5432/app?sslmode=require",
///                                 stream: "counter")
/// ```
///
/// `connection` takes what libpq takes: a URL (`postgres://` or `postgresql://`, with
/// `user:password@`, `host:port`, `/database` and `?sslmode=…&host=…&port=…` parts, percent-encoded)
/// or a `key=value` string (`host=… port=… user=… password=… dbname=… sslmode=… sslrootcert=…`,
/// values with spaces in single quotes). What it leaves out comes from the usual variables,
/// `PGHOST`, `PGPORT`, `PGUSER`, `PGPASSWORD`, `PGDATABASE`, `PGSSLMODE`, `PGSSLROOTCERT` and
/// `PGAPPNAME`, then from libpq's defaults (the Unix socket in `/var/run/postgresql`, port 5432,
/// the user the program runs as, a database named after the user, `sslmode=prefer`). A host that
/// starts with `/` is a folder holding the server's Unix socket. `application_name` is given to
/// the server by every session of the library (``applicationName``), so that operators see who
/// is connected.
///
/// `sslmode`: `disable` (plain TCP), `prefer` (TLS when the server offers it; the default),
/// `require`, `verify-ca` or `verify-full` (TLS or no connection; `require` does not check the
/// server's certificate, the `verify` modes check it against the system's trusted roots, or
/// against the certificates in the PEM file `sslrootcert` names instead). A server that does not
/// offer the TLS `sslmode` requires, or whose certificate is not accepted, fails the connection
/// at once (``ReplicationError/isTransient`` false): trying again would not change the answer.
///
/// The password is kept for connecting only: ``description`` and every error leave it out.
public struct PostgresStream: Sendable, CustomStringConvertible {
    /// How the connection asks for TLS.
    public enum TLSMode: String, Sendable {
        case disable, prefer, require
        case verifyCA = "verify-ca"
        case verifyFull = "verify-full"
    }

    /// The server's host name or address, or the folder of its Unix socket (starting with `/`).
    public let host: String
    public let port: Int
    public let user: String
    /// Kept for connecting; never printed.
    let password: String?
    public let database: String
    public let tls: TLSMode
    /// The PEM file of the certificates the `verify` modes trust (`sslrootcert`, or
    /// `PGSSLROOTCERT`); `nil`: the system's trusted roots.
    public let trustedRoots: String?
    /// The stream's name: one totally ordered history of one store's actions.
    public let stream: String
    /// The schema the library keeps its tables in (created when missing).
    public let schema: String
    /// The name every session of the library gives the server (`application_name` in the
    /// connection string, or `PGAPPNAME`), which `pg_stat_activity` shows operators; `nil`: none.
    public let applicationName: String?

    /// A stream on a server.
    ///
    /// - Parameters:
    ///   - connection: a libpq-style URL (`postgres://user@host:port/db`) or `key=value` string.
    ///   - stream: the stream's name: any text of 1 to 200 bytes without U+0000.
    ///   - schema: where the library keeps its tables: any identifier of 1 to 63 bytes that does
    ///     not begin with `pg_` (PostgreSQL keeps those for its own schemas).
    /// - Throws: ``ReplicationError`` of kind ``ReplicationError/Kind/invalidArgument`` naming
    ///   what in `connection` it cannot read (which part, never its text: a malformed string may
    ///   put a piece of the password anywhere), or an empty or too long `stream` or `schema`, or a
    ///   `schema` that begins with `pg_`.
    public init(connection: String, stream: String, schema: String = "reduxstore") throws(ReplicationError) {
        guard !stream.isEmpty, stream.utf8.count <= 200, !stream.utf8.contains(0) else {
            // Not named in the error: a NUL would cut the text short wherever it is printed.
            throw ReplicationError(
                .invalidArgument, stream: stream.utf8.contains(0) ? "" : stream,
                "the stream's name must be 1 to 200 bytes long, without NUL (which PostgreSQL's text cannot hold)")
        }
        guard !schema.isEmpty, schema.utf8.count <= 63, !schema.utf8.contains(0) else {
            throw ReplicationError(
                .invalidArgument, stream: stream, "the schema's name must be 1 to 63 bytes long, without NUL")
        }
        guard !schema.hasPrefix("pg_") else {
            throw ReplicationError(
                .invalidArgument, stream: stream,
                "the schema's name must not begin with \"pg_\", which PostgreSQL keeps for its own schemas")
        }
        var settings: [String: String]
        do throws(ReplicationError) {
            if connection.hasPrefix("postgres://") || connection.hasPrefix("postgresql://") {
                settings = try Self.parseURL(connection)
            } else {
                settings = try Self.parseKeywords(connection)
            }
        } catch {
            throw ReplicationError(.invalidArgument, stream: stream, "connection string: \(error.message)")
        }
        let environment: [String: String] = [
            "host": "PGHOST", "port": "PGPORT", "user": "PGUSER", "password": "PGPASSWORD",
            "dbname": "PGDATABASE", "sslmode": "PGSSLMODE", "sslrootcert": "PGSSLROOTCERT",
            "application_name": "PGAPPNAME",
        ]
        for (key, variable) in environment where settings[key] == nil {
            if let value = getenv(variable).map({ String(cString: $0) }), !value.isEmpty {
                settings[key] = value
            }
        }
        host = settings["host"] ?? "/var/run/postgresql"
        guard !host.contains(",") else {
            throw ReplicationError(
                .invalidArgument, stream: stream,
                "connection string: several hosts (libpq's failover list) are not supported: name one server, and after a failover open the stream anew on the promoted one")
        }
        guard let port = Int(settings["port"] ?? "5432"), (1...65535).contains(port) else {
            throw ReplicationError(
                .invalidArgument, stream: stream, "connection string: the port is not a number from 1 to 65535")
        }
        self.port = port
        user = settings["user"] ?? Self.currentUser()
        password = settings["password"]
        database = settings["dbname"] ?? user
        guard let tls = TLSMode(rawValue: settings["sslmode"] ?? "prefer") else {
            throw ReplicationError(
                .invalidArgument, stream: stream,
                "connection string: sslmode is not disable, prefer, require, verify-ca or verify-full")
        }
        self.tls = tls
        let roots = settings["sslrootcert"] ?? ""
        trustedRoots = roots.isEmpty ? nil : roots
        self.stream = stream
        self.schema = schema
        let name = settings["application_name"] ?? ""
        guard !name.utf8.contains(0) else {
            throw ReplicationError(.invalidArgument, stream: stream, "connection string: application_name holds NUL")
        }
        applicationName = name.isEmpty ? nil : name
    }

    /// `postgres://user@host:port/database (stream "name", schema "reduxstore")`: where, without the
    /// password.
    public var description: String {
        let place = host.hasPrefix("/") ? "\(host) (Unix socket), port \(port)" : "\(host):\(port)"
        return "postgres://\(user)@\(place)/\(database), stream \"\(stream)\""
    }

    /// The server's address alone, for messages.
    var serverDescription: String {
        host.hasPrefix("/") ? "the Unix socket in \(host) (port \(port))" : "\(host):\(port)"
    }

    private static let urlKeys: Set<String> = [
        "host", "port", "user", "password", "dbname", "sslmode", "sslrootcert", "application_name",
    ]

    /// The settings of a `postgres://` URL.
    static func parseURL(_ text: String) throws(ReplicationError) -> [String: String] {
        var rest = Substring(text)
        rest = rest.drop(while: { $0 != ":" }).dropFirst(3)  // "postgres" "://"
        var settings: [String: String] = [:]
        var query = Substring("")
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        var path = Substring("")
        if let slash = rest.firstIndex(of: "/") {
            path = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
        }
        if let at = rest.lastIndex(of: "@") {
            let userInfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
            if let colon = userInfo.firstIndex(of: ":") {
                settings["user"] = try percentDecoded(userInfo[..<colon], "user")
                settings["password"] = try percentDecoded(userInfo[userInfo.index(after: colon)...], "password")
            } else if !userInfo.isEmpty {
                settings["user"] = try percentDecoded(userInfo, "user")
            }
        }
        // host, host:port, [v6], [v6]:port
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else {
                throw ReplicationError(.invalidArgument, "an IPv6 host without its closing \"]\"")
            }
            settings["host"] = String(rest[rest.index(after: rest.startIndex)..<close])
            let after = rest[rest.index(after: close)...]
            if after.hasPrefix(":") { settings["port"] = String(after.dropFirst()) }
        } else if let colon = rest.lastIndex(of: ":") {
            if colon != rest.startIndex { settings["host"] = try percentDecoded(rest[..<colon], "host") }
            settings["port"] = String(rest[rest.index(after: colon)...])
        } else if !rest.isEmpty {
            settings["host"] = try percentDecoded(rest, "host")
        }
        if !path.isEmpty { settings["dbname"] = try percentDecoded(path, "database") }
        for pair in query.split(separator: "&") where !pair.isEmpty {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = try percentDecoded(parts[0], "parameter")
            guard parts.count == 2 else {
                throw ReplicationError(.invalidArgument, "a parameter without a value")
            }
            guard urlKeys.contains(key) || ignoredKeys.contains(key) else {
                throw ReplicationError(
                    .invalidArgument, "an unknown parameter (known: \(urlKeys.union(ignoredKeys).sorted().joined(separator: ", ")))")
            }
            settings[key] = try percentDecoded(parts[1], key)
        }
        return settings
    }

    /// libpq keywords this library accepts and does not use.
    private static let ignoredKeys: Set<String> = ["connect_timeout", "client_encoding"]

    /// The settings of a `key=value key='value with spaces'` string.
    static func parseKeywords(_ text: String) throws(ReplicationError) -> [String: String] {
        var settings: [String: String] = [:]
        var characters = Array(text.unicodeScalars)[...]
        func skipSpaces() { while let first = characters.first, first.properties.isWhitespace { characters.removeFirst() } }
        skipSpaces()
        while !characters.isEmpty {
            var key = ""
            while let first = characters.first, first != "=", !first.properties.isWhitespace {
                key.unicodeScalars.append(characters.removeFirst())
            }
            skipSpaces()
            guard characters.first == "=" else {
                throw ReplicationError(.invalidArgument, "a keyword without \"=value\"")
            }
            characters.removeFirst()
            skipSpaces()
            var value = ""
            if characters.first == "'" {
                characters.removeFirst()
                var closed = false
                while let scalar = characters.popFirst() {
                    if scalar == "\\", let next = characters.popFirst() {
                        value.unicodeScalars.append(next)
                    } else if scalar == "'" {
                        closed = true
                        break
                    } else {
                        value.unicodeScalars.append(scalar)
                    }
                }
                guard closed else {
                    throw ReplicationError(.invalidArgument, "a quoted value has no closing quote")
                }
            } else {
                while let first = characters.first, !first.properties.isWhitespace {
                    let scalar = characters.removeFirst()
                    if scalar == "\\", let next = characters.popFirst() {
                        value.unicodeScalars.append(next)
                    } else {
                        value.unicodeScalars.append(scalar)
                    }
                }
            }
            guard urlKeys.contains(key) || ignoredKeys.contains(key) else {
                throw ReplicationError(
                    .invalidArgument, "an unknown keyword (known: \(urlKeys.union(ignoredKeys).sorted().joined(separator: ", ")))")
            }
            settings[key] = value
            skipSpaces()
        }
        return settings
    }

    private static func percentDecoded(_ text: Substring, _ what: String) throws(ReplicationError) -> String {
        var bytes: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                // Never quote the text itself: it may be the password.
                throw ReplicationError(.invalidArgument, "the \(what) has a \"%\" not followed by two hex digits")
            }
            bytes.append(high << 4 | low)
        }
        guard let decoded = String(validating: bytes, as: UTF8.self) else {
            throw ReplicationError(.invalidArgument, "the \(what) is not UTF-8 once percent-decoded")
        }
        return decoded
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func currentUser() -> String {
        if let name = getenv("USER").map({ String(cString: $0) }), !name.isEmpty { return name }
        if let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name { return String(cString: name) }
        return "postgres"
    }
}
