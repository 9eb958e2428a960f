import type { RecipeProblem } from '../recipe/checks.js';
import type { ResolvedRecipe } from '../recipe/resolve.js';

/**
 * Refuses recipe keys that would do nothing beside `agent.external`: the external agent brings its own
 * tools and conversation and runs in its own process, so recipe tools, a simulated user and rollout
 * workers would never be used.
 */
export function externalAgentProblems(recipe: ResolvedRecipe): RecipeProblem[] {
  if (!recipe.agent.external) return [];
  const problems: RecipeProblem[] = recipe.tools.map((_, i) => ({
    path: `tools.${i}`,
    message: 'agent.external runs its own tools; recipe tools would never be called (remove them)',
  }));
  if (recipe.rollout.workers > 0)
    problems.push({
      path: 'rollout.workers',
      message: "agent.external episodes run in the agent's own process; rollout workers would stay idle (set 0)",
    });
  if (recipe.user)
    problems.push({
      path: 'user',
      message: 'agent.external drives its own conversation; a simulated user would never speak (remove it)',
    });
  return problems;
}
