/**
 * Hand-written solutions to twelve problems of the shared DeepCoder sample: a correct one and a
 * wrong one each (wrong answer, runtime error, missing method, too slow), for the reward and tool tests.
 */
export interface SampleSolution {
  readonly id: string;
  readonly correct: string;
  readonly wrong: string;
  /** The failure kind the wrong solution must produce on its first failing test. */
  readonly wrongKind: 'wrong_answer' | 'runtime_error' | 'timeout';
}

export const SAMPLE_SOLUTIONS: readonly SampleSolution[] = [
  {
    id: 'codeforces_test_0',
    correct:
      'import sys\nd = sys.stdin.read().split()\nt = int(d[0])\nfor i in range(t):\n    x, y = int(d[1 + 2 * i]), int(d[2 + 2 * i])\n    print(min(x, y), max(x, y))\n',
    wrong:
      'import sys\nd = sys.stdin.read().split()\nt = int(d[0])\nfor i in range(t):\n    x, y = int(d[1 + 2 * i]), int(d[2 + 2 * i])\n    print(x, y)\n',
    wrongKind: 'wrong_answer',
  },
  {
    id: 'lcbv5_test_0',
    correct: 'n = int(input())\na = list(map(int, input().split()))\nprint(a.index(sorted(a)[-2]) + 1)\n',
    wrong: 'n = int(input())\na = list(map(int, input().split()))\nprint(a.index(sorted(a)[-2]))\n',
    wrongKind: 'wrong_answer',
  },
  {
    id: 'lcbv5_test_58',
    correct: 'print(input().replace(".", ""))\n',
    wrong: 'print(input().replace(".", "").upper())\n',
    wrongKind: 'wrong_answer',
  },
  {
    id: 'lcbv5_test_117',
    correct:
      'def main():\n    s = input().strip()\n    print("Yes" if s.endswith("san") else "No")\n\nif __name__ == "__main__":\n    main()\n',
    wrong: 's = input().strip()\nprint("Yes" if s.endswith("san") else "No"\n',
    wrongKind: 'runtime_error',
  },
  {
    id: 'code_contests_test_0',
    correct: [
      'import sys',
      'data = sys.stdin.read().split()',
      'n, m = int(data[0]), int(data[1])',
      'rows = data[2:2 + n]',
      'key = lambda i: [ord(c) if j % 2 == 0 else -ord(c) for j, c in enumerate(rows[i])]',
      'print(" ".join(str(i + 1) for i in sorted(range(n), key=key)))',
    ].join('\n'),
    wrong:
      'import sys\ndata = sys.stdin.read().split()\nn = int(data[0])\nrows = data[2:2 + n]\nprint(" ".join(str(i + 1) for i in sorted(range(n), key=lambda i: rows[i])))\n',
    wrongKind: 'wrong_answer',
  },
  {
    id: 'lcbv5_test_249',
    correct:
      'class Solution:\n    def smallestNumber(self, n: int) -> int:\n        x = 1\n        while x < n:\n            x = x * 2 + 1\n        return x\n',
    wrong: 'class Solution:\n    def smallestNumber(self, n: int) -> int:\n        while True:\n            pass\n',
    wrongKind: 'timeout',
  },
  {
    id: 'lcbv5_test_243',
    correct: [
      'class Solution:',
      '    def smallestNumber(self, n: int, t: int) -> int:',
      '        x = n',
      '        while True:',
      '            p = 1',
      '            for c in str(x):',
      '                p *= int(c)',
      '            if p % t == 0:',
      '                return x',
      '            x += 1',
    ].join('\n'),
    wrong: 'class Solution:\n    def smallest_number(self, n: int, t: int) -> int:\n        return n\n',
    wrongKind: 'runtime_error',
  },
  {
    id: 'lcbv5_test_268',
    correct:
      'class Solution:\n    def countSubarrays(self, nums: List[int]) -> int:\n        return sum(1 for i in range(len(nums) - 2) if 2 * (nums[i] + nums[i + 2]) == nums[i + 1])\n',
    wrong:
      'class Solution:\n    def countSubarrays(self, nums: List[int]) -> int:\n        return sum(1 for i in range(len(nums) - 2) if nums[i] == nums[i + 2])\n',
    wrongKind: 'wrong_answer',
  },
  {
    id: 'lcbv5_test_220',
    correct: [
      'class Solution:',
      '    def numberOfSubstrings(self, s: str, k: int) -> int:',
      '        total = 0',
      '        for i in range(len(s)):',
      '            count = Counter()',
      '            for j in range(i, len(s)):',
      '                count[s[j]] += 1',
      '                if count[s[j]] >= k:',
      '                    total += len(s) - j',
      '                    break',
      '        return total',
    ].join('\n'),
    wrong:
      'class Solution:\n    def numberOfSubstrings(self, s: str, k: int) -> int:\n        return len(s) * (len(s) + 1) // 2 - k\n',
    wrongKind: 'wrong_answer',
  },
  {
    id: 'lcbv5_test_108',
    correct:
      'class Solution:\n    def minElement(self, nums: List[int]) -> int:\n        return min(sum(map(int, str(x))) for x in nums)\n',
    wrong: 'class Solution:\n    def minElement(self, nums: List[int]) -> int:\n        return min(nums) / 0\n',
    wrongKind: 'runtime_error',
  },
  {
    id: 'lcbv5_test_88',
    correct: [
      'class Solution:',
      '    def findMaximumScore(self, nums: List[int]) -> int:',
      '        best = total = 0',
      '        for x in nums[:-1]:',
      '            best = max(best, x)',
      '            total += best',
      '        return total',
    ].join('\n'),
    wrong:
      'class Solution:\n    def findMaximumScore(self, nums: List[int]) -> int:\n        return (len(nums) - 1) * nums[0]\n',
    wrongKind: 'wrong_answer',
  },
  {
    id: 'lcbv5_test_263',
    correct: [
      'class Solution:',
      '    def maxDistinctElements(self, nums: List[int], k: int) -> int:',
      '        last = float("-inf")',
      '        count = 0',
      '        for x in sorted(nums):',
      '            v = max(last + 1, x - k)',
      '            if v <= x + k:',
      '                last = v',
      '                count += 1',
      '        return count',
    ].join('\n'),
    wrong:
      'class Solution:\n    def maxDistinctElements(self, nums: List[int], k: int) -> int:\n        return len(set(nums))\n',
    wrongKind: 'wrong_answer',
  },
];
