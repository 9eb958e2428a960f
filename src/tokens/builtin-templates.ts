import { join } from 'node:path';
import { projectRoot } from '../util/paths.js';

/**
 * Chat templates atk ships in templates/, by the name `model.chat_template` and `atk doctor --chat-template`
 * take instead of a file. chatml-tools: ChatML with tools in the system turn and calls as a JSON list in
 * one <tool_call> (format smollm2), for ChatML models whose own template has no tools.
 */
export const BUILTIN_CHAT_TEMPLATES = ['chatml-tools'] as const;

/** The file of a built-in template name, or undefined for anything else (a path). */
export function builtinChatTemplate(name: string): string | undefined {
  return (BUILTIN_CHAT_TEMPLATES as readonly string[]).includes(name)
    ? join(projectRoot(), 'templates', `${name}.jinja`)
    : undefined;
}
