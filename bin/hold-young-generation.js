// Imported by the service programs after require-node.js. V8 doubles its young generation whenever most of it
// survives a collection, which is what loading a few hundred modules looks like: sized by its start, the idle service
// kept 16 MB of semi-spaces (8 MB more RSS). Growth is held off while the program starts and allowed again once it
// listens (src/server/listen.ts), so its requests size it as before. servicectl, which starts and ends, keeps V8's
// default.
import v8 from 'node:v8'

v8.setFlagsFromString('--semi-space-growth-factor=1')
