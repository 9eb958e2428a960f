import type { MachineFacts } from '../setup/plan.js';

/** A Debian machine as root with apt and none of the trainer's packages: what `atk setup` installs everything on. */
export const bareDebianRoot: MachineFacts = {
  osIds: ['debian'],
  isRoot: true,
  onPath: new Set(['apt-get']),
  installedPackages: new Set(),
  torch: false,
  pytest: false,
};
