/** Resolves after `ms` milliseconds (a timer, so the core needs no runtime global). */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))
