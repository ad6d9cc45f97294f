// The entry point every fuzzing harness shares.
#if canImport(Glibc)
import Glibc
#endif

/// A harness: one input as libFuzzer hands it (`data` may be NULL for an empty input); returns 0.
public typealias FuzzHarness = @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt

#if FUZZING
// SwiftPM links an executable's `main` to its Swift entry point, not to libFuzzer's `main`, so the
// harness hands control to libFuzzer's driver itself.
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: FuzzHarness
) -> CInt
#endif

/// Runs a harness executable. Built for fuzzing (`-sanitize=fuzzer -DFUZZING`), it hands the
/// command line and `harness` to libFuzzer. Built plainly, it runs `harness` once over each file
/// named on the command line and each file of each folder named, and says how many.
public func fuzzMain(_ name: String, _ harness: FuzzHarness) -> Never {
    #if FUZZING
    var argc = CommandLine.argc
    var argv = CommandLine.unsafeArgv
    exit(runFuzzerDriver(&argc, &argv, harness))
    #else
    let replayed = replay(Array(CommandLine.arguments.dropFirst()), harness)
    print("\(name): replayed \(replayed) inputs")
    exit(0)
    #endif
}

/// Runs the harness once over each file named, and over each file of each folder named.
func replay(_ paths: [String], _ body: FuzzHarness) -> Int {
    var count = 0
    for path in paths {
        var files: [String] = []
        if let folder = opendir(path) {
            while let entry = readdir(folder) {
                // The name in place (a dirent is only as long as its name).
                let field = UnsafeRawPointer(entry) + MemoryLayout<dirent>.offset(of: \dirent.d_name)!
                let name = String(cString: field.assumingMemoryBound(to: CChar.self))
                if !name.hasPrefix(".") { files.append(path + "/" + name) }
            }
            closedir(folder)
            files.sort()
        } else {
            files = [path]
        }
        for file in files {
            guard let stream = fopen(file, "rb") else { fatalError("cannot read \(file)") }
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let read = fread(&chunk, 1, chunk.count, stream)
                if read == 0 { break }
                bytes += chunk[0..<read]
            }
            fclose(stream)
            _ = bytes.withUnsafeBufferPointer { body($0.baseAddress, $0.count) }
            count += 1
        }
    }
    return count
}

