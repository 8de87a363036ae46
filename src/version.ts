import pkg from '../package.json'

/** The gateway's version: package.json's, embedded at build time (the compiled binary has no package.json). */
export const VERSION: string = pkg.version
