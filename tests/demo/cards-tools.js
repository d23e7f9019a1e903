// Tools of cards.html, each allowing other decisions; what ran (and with which inputs) is
// kept in window.ran for cards.test.mjs.
window.ran = [];
const tool = (name, allowedDecisions) => ({
  name,
  description: `${name} a file`,
  parameters: { type: 'object', properties: { path: { type: 'string', description: 'The file' } }, required: ['path'] },
  requireApproval: true,
  allowedDecisions,
  execute: async (inputs) => {
    window.ran.push([name, inputs]);
    return { ok: name };
  },
});

export const tools = [
  tool('archive_file', ['approve', 'reject']),
  tool('rename_file', ['reject', 'edit']),
  tool('shred_file', ['reject']),
];
