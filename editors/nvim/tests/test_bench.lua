-- :KernelBench on a CPU-sized example: the real harness runs the kernel on
-- Triton's CPU interpreter; the result lands on ModelNew's code lens.
local H = ... -- tests/helpers.lua, passed by its run()
local kl = require('kernel_lsp')

kl.setup({ cmd = { H.bin, 'serve' }, python = H.python })
local dir = H.tmpdir()
H.copy('examples/tanh_activation/reference.py', dir)
local path = H.copy('examples/tanh_activation/candidate_fixed.py', dir)

H.test(':KernelBench reports progress and puts the result on the ModelNew lens', function()
  local buf = H.open(path)
  H.client(buf)
  local model = H.line_of(buf, 'class ModelNew')
  local function model_lens()
    for _, l in ipairs(H.lenses(buf)) do
      if l.line == model then
        return l.title
      end
    end
  end
  H.eq('▶ Benchmark vs reference', H.wait(20000, model_lens, 'the ModelNew lens'), 'lens before')
  kl.progress.events = {}
  local result, err, done = nil, nil, false
  kl.benchmark({ bufnr = buf, on_done = function(r, e) result, err, done = r, e, true end })
  H.ok(kl.running[buf], 'the run is tracked')
  H.wait(300000, function() return done end, 'the benchmark to finish')
  H.ok(not err, 'benchmark error: ' .. vim.inspect(err))
  H.eq('cpu-interpreter', result.mode, 'mode')
  H.eq(true, result.correct, 'correct')
  -- The command's response and the progress `end` notification travel on two
  -- streams that tower-lsp-server merges, so `end` may arrive just after the
  -- result: wait for it (it must come) rather than assume an order.
  local function seen(kind)
    local kinds = vim.tbl_map(function(e) return e.kind end, kl.progress.events)
    return vim.list_contains(kinds, kind)
  end
  H.wait(5000, function() return seen('end') end, 'the progress end')
  H.ok(seen('begin') and seen('end'), 'LspProgress begin and end seen: ' .. vim.inspect(kl.progress.events))
  H.eq(nil, kl.running[buf], 'no longer running')
  local title = H.wait(20000, function()
    local t = model_lens()
    return t and t:find('correct', 1, true) and t
  end, 'the result lens (have: ' .. tostring(model_lens()) .. ')')
  H.contains(title, 'correct (CPU interpreter, no timing)')
  H.eq('correct (CPU interpreter, no timing)', kl.bench_summary(result), 'summary')
end)

H.test("a run's KL9xx finding is a diagnostic too, not only a notification", function()
  -- No reference beside it: the run ends with KL907 (no-reference). The server
  -- keeps that finding with the file's diagnostics; Neovim pulls them, so it
  -- must be asked to pull again (it would otherwise see KL907 only after an edit).
  local lone_dir = H.tmpdir()
  local lone = H.copy('examples/tanh_activation/candidate_fixed.py', lone_dir, 'no_reference.py')
  local buf = H.open(lone)
  H.client(buf)
  H.wait(20000, function()
    return #vim.lsp.codelens.get(buf) > 0
  end, 'the analysis of ' .. lone)
  H.eq(nil, H.diagnostic(buf, 'KL907'), 'KL907 before the run')
  local result, done = nil, false
  kl.benchmark({ bufnr = buf, on_done = function(r) result, done = r, true end })
  H.wait(300000, function() return done end, 'the benchmark to finish')
  H.eq('no-reference', type(result) == 'table' and type(result.error) == 'table' and result.error.kind or nil,
    'the run ends without a reference: ' .. vim.inspect(result))
  local notified = vim.tbl_filter(function(m)
    return m.msg:find('no-reference', 1, true) ~= nil
  end, require('kernel_lsp.ui').messages)
  H.ok(#notified > 0, 'the outcome is notified')
  -- No edit, no save: only the run changed the diagnostics.
  local d = H.wait_code(buf, 'KL907', 10000)
  H.eq(vim.diagnostic.severity.WARN, d.severity, 'KL907 severity')
  H.ok(not vim.bo[buf].modified, 'the buffer was not edited')
  vim.cmd('bwipeout! ' .. buf)
end)

H.test(':KernelHistory lists the run', function()
  local buf = vim.fn.bufnr(path)
  vim.cmd('buffer ' .. buf)
  vim.cmd('KernelHistory')
  local hbuf = H.wait(10000, function()
    local b = vim.fn.bufnr('kernel-lsp://history')
    return b ~= -1 and b
  end, 'the history split')
  local lines = vim.api.nvim_buf_get_lines(hbuf, 0, -1, false)
  local rows = vim.tbl_filter(function(l) return l:match('^| ') and not l:find('| time |', 1, true) end, lines)
  H.ok(#rows >= 1, 'a history row: ' .. table.concat(lines, '\n'))
  vim.cmd('close')
end)

H.test(':KernelBench from the command line, then the lens again', function()
  local buf = vim.fn.bufnr(path)
  vim.cmd('buffer ' .. buf)
  -- An edit makes the stored result stale; the command saves the buffer first.
  vim.api.nvim_buf_set_lines(buf, 0, 0, false, { '# edited' })
  vim.cmd('KernelBench')
  H.ok(not vim.bo[buf].modified, 'buffer written before the run')
  H.wait(300000, function() return kl.running[buf] == nil end, 'the second benchmark')
  local model = H.line_of(buf, 'class ModelNew')
  H.wait(20000, function()
    for _, l in ipairs(H.lenses(buf)) do
      if l.line == model and l.title:find('CPU interpreter', 1, true) and not l.title:find('before your last edits', 1, true) then
        return true
      end
    end
  end, 'a fresh result lens: ' .. vim.inspect(H.lenses(buf)))
end)

H.test('running the ModelNew code lens benchmarks; :KernelBenchCancel stops a run', function()
  local buf = vim.fn.bufnr(path)
  vim.cmd('buffer ' .. buf)
  local model = H.line_of(buf, 'class ModelNew')
  vim.api.nvim_win_set_cursor(0, { model + 1, 0 })
  vim.lsp.codelens.run()
  H.ok(kl.running[buf], 'the lens started a benchmark')
  H.wait(300000, function() return kl.running[buf] == nil end, 'the lens benchmark')

  local err, done
  kl.benchmark({ bufnr = buf, on_done = function(_, e) err, done = e, true end })
  vim.cmd('KernelBenchCancel')
  H.wait(30000, function() return done end, 'the cancelled run to end')
  H.ok(err, 'a cancelled run answers an error')
  -- The server stopped the run: its progress ends with "cancelled".
  H.wait(30000, function()
    local last = kl.progress.events[#kl.progress.events]
    return last and last.kind == 'end' and last.text:find('cancelled', 1, true)
  end, 'the server to end the progress as cancelled: ' .. vim.inspect(kl.progress.events[#kl.progress.events]))
  H.eq(nil, kl.running[buf], 'no longer running')
end)

H.test('a KernelBench-size task: KL914 before anything is allocated, its action runs at reduced sizes', function()
  local wide_dir = H.tmpdir()
  H.copy('tests/fixtures/bench/wide_ref.py', wide_dir)
  local wide = H.copy('tests/fixtures/bench/wide_new.py', wide_dir)
  local buf = H.open(wide)
  H.client(buf)
  H.wait(20000, function()
    return #vim.lsp.codelens.get(buf) > 0
  end, 'the analysis of ' .. wide)
  local result, done = nil, false
  local t0 = vim.uv.hrtime()
  kl.benchmark({ bufnr = buf, options = { cpu = true }, on_done = function(r) result, done = r, true end })
  H.wait(120000, function() return done end, 'the refused benchmark')
  H.ok((vim.uv.hrtime() - t0) / 1e9 < 60, 'refused from shapes, not after allocating 6 GiB')
  H.eq('too-large-for-interpreter', type(result) == 'table' and type(result.error) == 'table' and result.error.kind or nil,
    'the size guard: ' .. vim.inspect(result))
  local d = H.wait_code(buf, 'KL914', 10000)
  H.contains(d.message, '--small')

  -- The code action on KL914, as `gra` offers it: the same benchmark at reduced sizes.
  vim.api.nvim_win_set_cursor(0, { d.lnum + 1, d.col })
  local before = #kl.progress.events
  vim.lsp.buf.code_action({
    filter = function(a) return a.title == 'Benchmark at reduced sizes (CPU interpreter)' end,
    apply = true,
  })
  H.wait(5000, function() return kl.running[buf] ~= nil end, 'the action to start a tracked benchmark')
  H.wait(300000, function() return kl.running[buf] == nil end, 'the reduced-size benchmark')
  H.ok(#kl.progress.events > before, 'the run reported progress')
  local model = H.line_of(buf, 'class ModelNew')
  H.wait(20000, function()
    for _, l in ipairs(H.lenses(buf)) do
      if l.line == model and l.title:find('correct (CPU interpreter, no timing)', 1, true) then
        return true
      end
    end
  end, 'a correct result lens: ' .. vim.inspect(H.lenses(buf)))
  H.wait(10000, function() return H.diagnostic(buf, 'KL914') == nil end, 'KL914 gone after the passing run')
  vim.cmd('bwipeout! ' .. buf)
end)

H.test(':KernelBench refuses an unknown argument and completes small/full', function()
  H.eq({ 'small', 'full' }, vim.fn.getcompletion('KernelBench ', 'cmdline'), 'completion')
  -- An error-level message aborts the Ex command (as any Vim command's error does).
  pcall(vim.cmd, 'KernelBench fast')
  local shown = vim.tbl_filter(function(m)
    return (m.msg or ''):find('not fast', 1, true) ~= nil
  end, require('kernel_lsp.ui').messages)
  H.eq(1, #shown, 'one message names the bad argument: ' .. vim.inspect(require('kernel_lsp.ui').messages))
  H.eq(nil, next(kl.running), 'nothing started')
end)
