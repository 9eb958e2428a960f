// DeepSeek V3's tool-call markers spelled out as the model writes them, for tests that build replies by
// hand; written here, not imported from the parser, so a typo in the parser's copy shows.
export const [BEGIN, CALL, SEP, END, CLOSE] = [
  '<｜tool▁calls▁begin｜>',
  '<｜tool▁call▁begin｜>',
  '<｜tool▁sep｜>',
  '<｜tool▁call▁end｜>',
  '<｜tool▁calls▁end｜>',
] as const;
