-- LLM rewrites in the real Neovim, the paths of the issue "The first hour":
-- with no LLM configured, one message that says how to set one, before any
-- benchmark; with an LLM (llm_replay.py replaying answer_persistent.md), the
-- preview shows the change hunk by hunk, the applied file keeps the user's
-- `# kernel-lsp: reference` line, and a benchmark of it is correct.
local H = ... -- tests/helpers.lua, passed by its run()
local kl = require('kernel_lsp')

-- Every vim.notify call, as the user would see it (Neovim's window/showMessage
-- handler and the plugin both go through vim.notify).
local notes = {}
local real_notify = vim.notify
vim.notify = function(msg, level, opts)
  notes[#notes + 1] = { msg = tostring(msg), level = level or vim.log.levels.INFO }
  return real_notify(msg, level, opts)
end

local function loud(list)
  return vim.tbl_filter(function(n) return n.level >= vim.log.levels.WARN end, list)
end

kl.setup({ cmd = { H.bin, 'serve' }, python = H.python })

-- examples/gru at CPU sizes: what `kernel-lsp rewrite --cpu --set ...` takes.
local SIZES = { seq_len = 4, batch_size = 2, input_size = 16, hidden_size = 16, num_layers = 2 }
local USER_REF = '# kernel-lsp: reference = reference.py'
local ANSWER_REF = '# kernel-lsp: reference = reference_from_the_answer.py'
local GRU = 'gru_python_loop.py'

--- A project: the GRU that launches per time step, starting with the user's
--- reference line, and its reference with the CPU sizes (a benchmark takes
--- its inputs from the reference); `toml` as kernel-lsp.toml if given.
local function project(toml)
  local dir = H.tmpdir()
  local lines = vim.fn.readfile(H.repo .. '/examples/gru/' .. GRU)
  table.insert(lines, 1, USER_REF)
  vim.fn.writefile(lines, dir .. '/' .. GRU)
  local ref = vim.fn.readfile(H.repo .. '/examples/gru/reference.py')
  for i, l in ipairs(ref) do
    local name = l:match('^([%w_]+) = %d+$')
    if name and SIZES[name] then
      ref[i] = string.format('%s = %d', name, SIZES[name])
    end
  end
  vim.fn.writefile(ref, dir .. '/reference.py')
  if toml then
    vim.fn.writefile(vim.split(toml, '\n'), dir .. '/kernel-lsp.toml')
  end
  return dir .. '/' .. GRU
end

H.test('no LLM configured: the rewrite shows one message, saying how to set one, within seconds', function()
  local path = project(nil)
  local buf = H.open(path)
  H.client(buf)
  local d = H.wait_code(buf, 'KL001')

  -- :KernelPersistent's path.
  notes = {}
  local done, err
  local t0 = vim.uv.hrtime()
  kl.rewrite('persistent', { bufnr = buf, on_done = function(_, e) done, err = true, e end })
  H.wait(120000, function() return done end, 'the answer to kernel-lsp.rewrite')
  local secs = (vim.uv.hrtime() - t0) / 1e9
  vim.wait(1500) -- a second message about it would have come by now
  local shown = loud(notes)
  H.eq(1, #shown, 'exactly one message: ' .. vim.inspect(notes))
  local msg = shown[1].msg
  H.contains(msg, 'no LLM is configured')
  for _, key in ipairs({ 'llm.base-url', 'llm.model', 'llm.api-key-env' }) do
    H.contains(msg, key, 'the message names ' .. key)
  end
  H.ok(kl.shown_by_server(err), 'the request error says the server showed it: ' .. vim.inspect(err))
  -- The baseline benchmark of this task-sized GRU alone takes minutes on the CPU interpreter.
  H.ok(secs < 6, string.format('the message came after %.1fs: a benchmark ran first?', secs))

  -- The same from the code action on KL001 (what `gra` offers).
  notes = {}
  vim.api.nvim_win_set_cursor(0, { d.lnum + 1, d.col })
  vim.lsp.buf.code_action({
    filter = function(a) return a.title == 'Make persistent with LLM' end,
    apply = true,
  })
  H.wait(30000, function() return #loud(notes) > 0 end, 'the message after the code action: ' .. vim.inspect(notes))
  vim.wait(1500)
  shown = loud(notes)
  H.eq(1, #shown, 'exactly one message from the code action: ' .. vim.inspect(notes))
  H.contains(shown[1].msg, 'no LLM is configured')
  vim.cmd('bwipeout! ' .. buf)
end)

--- llm_replay.py serving `answer` on loopback: { url, stop }.
local function replay(answer)
  local file = vim.fn.tempname() .. '.md'
  vim.fn.writefile(vim.split(answer, '\n', { plain = true }), file, 'b')
  local url
  local proc = vim.system({ H.python, H.repo .. '/editors/vscode/e2e/llm_replay.py', file }, {
    stdout = function(_, data)
      url = url or (data and data:match('(http://%S+)'))
    end,
  })
  H.wait(20000, function() return url end, 'llm_replay.py to print its URL')
  return { url = url, stop = function() proc:kill(15) end }
end

H.test('rewrite with an LLM: the preview diffs the hunks, the applied file keeps the user reference, the benchmark is correct', function()
  local fixture = table.concat(vim.fn.readfile(H.repo .. '/tests/fixtures/llm/answer_persistent.md', 'b'), '\n')
  local fence = assert(fixture:find('```python\n', 1, true), 'a python block in the fixture') + #'```python\n'
  local llm = replay(fixture:sub(1, fence - 1) .. ANSWER_REF .. '\n' .. fixture:sub(fence))
  local ok, err = xpcall(function()
    local path = project(string.format('[llm]\nbase-url = "%s"\nmodel = "replay"\n', llm.url))
    local buf = H.open(path)
    H.client(buf)
    H.wait_code(buf, 'KL001')
    local before = vim.api.nvim_buf_get_lines(buf, 0, -1, false)

    local sent, preview
    local real_apply = kl.on_apply_edit
    kl.on_apply_edit = function(e, params, ctx)
      sent = params
      return real_apply(e, params, ctx)
    end
    kl.config.confirm = function(message)
      preview = { message = message, text = H.text(vim.fn.bufnr('kernel-lsp://rewrite-preview')) }
      H.eq(before, vim.api.nvim_buf_get_lines(buf, 0, -1, false), 'the buffer while the preview is shown')
      return true
    end
    local done, rerr
    kl.rewrite('persistent', {
      bufnr = buf,
      options = { cpu = true, set = SIZES, candidates = 1, repairs = 0, ['bench-timeout'] = 120 },
      on_done = function(_, e) done, rerr = true, e end,
    })
    H.wait(300000, function() return done end, 'the rewrite to finish')
    kl.on_apply_edit = real_apply
    H.ok(not rerr, 'rewrite error: ' .. vim.inspect(rerr))

    -- The edit: one text edit per changed region, under one annotation that needs confirmation.
    H.ok(sent and sent.edit and sent.edit.documentChanges, 'the server sent workspace/applyEdit: ' .. vim.inspect(sent))
    local edits = sent.edit.documentChanges[1].edits
    H.ok(#edits >= 2, 'one text edit per changed region, got ' .. #edits)
    for _, e in ipairs(edits) do
      H.ok(not (e.range.start.line == 0 and e.range['end'].line >= #before - 1), 'a whole-file replacement: ' .. vim.inspect(e.range))
    end
    local annotation = sent.edit.changeAnnotations[edits[1].annotationId]
    H.eq(true, annotation.needsConfirmation, 'needsConfirmation')
    H.contains(annotation.label, 'Make persistent')

    -- What the user saw before answering: the hunks as a diff, not the whole file replaced.
    H.ok(preview, 'the diff was shown before applying')
    local text = preview.text
    local _, hunks = text:gsub('\n@@ ', '')
    H.ok(hunks >= 2, 'the preview shows the change hunk by hunk (' .. hunks .. ' hunks):\n' .. text)
    H.contains(text, '+def gru_persistent_kernel(')
    H.contains(text, '-            for t in range(seq_len):')
    H.ok(not text:find('\n[-+]# kernel%-lsp: reference'), 'the reference line does not change in the preview:\n' .. text)
    local _, removed = text:gsub('\n%-[^-]', '')
    H.ok(removed < #before - 10, string.format('not every line removed and re-added (%d of %d)', removed, #before))
    H.contains(preview.message, 'Make persistent')

    -- Applied: the answer's code with the user's reference line.
    local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
    H.eq(USER_REF, lines[1], "the user's reference line")
    H.ok(not H.text(buf):find('reference_from_the_answer', 1, true), "the answer's reference line was applied")
    H.contains(H.text(buf), 'def gru_persistent_kernel(')

    -- Benchmark of the applied file (saved first) against the user's reference.
    local result, berr, bdone
    kl.benchmark({ bufnr = buf, options = { cpu = true }, on_done = function(r, e) result, berr, bdone = r, e, true end })
    H.wait(300000, function() return bdone end, 'the benchmark to finish')
    H.ok(not vim.bo[buf].modified, 'saved before the benchmark')
    H.ok(not berr and type(result) == 'table', 'benchmark error: ' .. vim.inspect(berr))
    H.eq('cpu-interpreter', result.mode, 'mode')
    H.eq(true, result.correct, 'correct: ' .. kl.bench_summary(result) .. ' ' .. vim.inspect(result.error))
    H.ok(result.error == nil or result.error == vim.NIL, 'no error: ' .. vim.inspect(result.error))
    H.eq('correct (CPU interpreter, no timing)', kl.bench_summary(result), 'summary')
  end, debug.traceback)
  llm.stop()
  if not ok then
    error(err, 0)
  end
end)
