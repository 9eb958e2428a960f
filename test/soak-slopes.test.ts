import { describe, expect, test } from 'vitest';
import { slopePer100Steps, soakRows, type SoakSample } from '../bench/lib/soak-slopes.js';

describe('slopePer100Steps', () => {
  test('returns the exact slope of a line, per 100 steps', () => {
    const line = Array.from({ length: 50 }, (_, i) => ({ step: i * 4, value: 300 + 0.25 * i * 4 }));
    expect(slopePer100Steps(line)).toBeCloseTo(25, 10);
  });

  test('returns a flat sawtooth (a GC cycle) as nearly flat, whatever the slope inside each tooth', () => {
    // 20 teeth of 20 steps rising 19 each (95 per 100 steps inside a tooth); numpy.polyfit gives 0.2494 per 100 steps.
    const saw = Array.from({ length: 400 }, (_, step) => ({ step, value: 200 + (step % 20) }));
    expect(slopePer100Steps(saw)).toBeCloseTo(0.2494, 3);
  });

  test('returns undefined without two distinct steps', () => {
    expect([
      slopePer100Steps([]),
      slopePer100Steps([{ step: 3, value: 1 }]),
      slopePer100Steps([
        { step: 3, value: 1 },
        { step: 3, value: 5 },
      ]),
    ]).toStrictEqual([undefined, undefined, undefined]);
  });
});

describe('soakRows', () => {
  // Memory ramps up by 100 MiB during the first 50 steps, then is flat; descriptors leak one per 10 steps throughout.
  const samples: SoakSample[] = Array.from({ length: 201 }, (_, step) => ({
    step,
    values: {
      rss: step < 50 ? 100 + 2 * step : 200,
      fds: 20 + Math.floor(step / 10),
      ...(step % 2 === 0 ? { heap: 50 } : {}),
    },
  }));

  test('returns slopes after warm-up, start and end means, and fails only a figure over its limit', () => {
    const rows = soakRows(
      samples,
      [
        { name: 'rss', unit: 'MiB', limitPer100Steps: 16 },
        { name: 'fds', unit: '', limitPer100Steps: 2 },
        { name: 'heap', unit: 'MiB' },
      ],
      50,
    );
    expect(rows.map((r) => [r.name, r.samples, r.ok])).toStrictEqual([
      ['rss', 151, true],
      ['fds', 151, false],
      ['heap', 76, true],
    ]);
    // fds over steps 50-64 and 186-200 (a tenth of the 151 samples each): 25 x10, 26 x5; 38 x4, 39 x10, 40.
    expect(rows.map((r) => [r.start, r.end, r.slopePer100Steps])).toStrictEqual([
      [200, 200, 0],
      [expect.closeTo(380 / 15, 10), expect.closeTo(582 / 15, 10), expect.closeTo(10, 0)],
      [50, 50, 0],
    ]);
  });

  test("returns the ramp as growth when warm-up is 0, and slopes from the figure's own later start", () => {
    const [rss] = soakRows(samples, [{ name: 'rss', unit: 'MiB', limitPer100Steps: 16 }], 0);
    // Over all 201 steps the ramp of the first 50 shows; over the later half (steps 100-200) it does not.
    expect([rss!.slopePer100Steps! > 16, rss!.lateSlopePer100Steps, rss!.ok]).toStrictEqual([true, 0, true]);
    const leak: SoakSample[] = Array.from({ length: 201 }, (_, step) => ({ step, values: { rss: 100 + step / 4 } }));
    const [leaking] = soakRows(leak, [{ name: 'rss', unit: 'MiB', limitPer100Steps: 16 }], 0);
    expect([leaking!.lateSlopePer100Steps, leaking!.ok]).toStrictEqual([expect.closeTo(25, 0), false]);
    const [late] = soakRows(samples, [{ name: 'rss', unit: 'MiB', limitPer100Steps: 16, fromStep: 60 }], 0);
    expect([late!.samples, late!.slopePer100Steps, late!.ok]).toStrictEqual([141, 0, true]);
  });
});
