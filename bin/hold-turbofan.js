// Imported by the service programs after hold-young-generation.js. Starting a service runs some functions (module
// loading above all) often enough for V8 to compile them with TurboFan, its top tier, for work that ends once the
// program listens; that brought TurboFan's own machine code into memory (about 5 MB of the node binary's pages,
// which RSS counts) besides the code it made. TurboFan is held off while the program starts (the interpreter,
// Sparkplug and Maglev still run) and allowed again once it listens (src/server/listen.ts), so that the code
// requests make hot is optimized as before. servicectl, which starts and ends, keeps V8's default.
import v8 from 'node:v8'

v8.setFlagsFromString('--no-turbofan')
