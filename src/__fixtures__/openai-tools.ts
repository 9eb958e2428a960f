/** An OpenAI function tool that adds two numbers, as the gateway tests offer it to the model. */
export const ADD_TOOL = {
  type: 'function' as const,
  function: {
    name: 'add',
    description: 'Add two numbers',
    parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } },
  },
};
