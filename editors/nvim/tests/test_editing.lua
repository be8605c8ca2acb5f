-- require('kernel_lsp').setup(): diagnostics, the quick fix, fix-all, code
-- lenses, inlay hints, :KernelExplain, :KernelHistory, :KernelPersistent and
-- the rewrite diff preview.
local H = ... -- tests/helpers.lua, passed by its run()
local kl = require('kernel_lsp')

kl.setup({
  cmd = { H.bin, 'serve' },
  python = H.python,
  target_gpu = 'h100',
  settings = { ignore = { 'KL008' } },
})
local dir = H.tmpdir()

H.test('setup() passes cmd and settings; the server applies them', function()
  local buf = H.open(H.copy('examples/conv_scalar/candidate_direct_conv.py', dir))
  local client = H.client(buf)
  H.eq({ H.bin, 'serve' }, client.config.cmd, 'cmd')
  H.eq({ ignore = { 'KL008' }, python = H.python, ['target-gpu'] = 'h100' },
    client.config.settings['kernel-lsp'], 'settings')
  -- KL008 would fire on this file; the settings ignore it. The kernel lens shows the server analysed it.
  H.wait(20000, function() return #H.lenses(buf) > 0 end, 'code lenses')
  vim.wait(500)
  H.ok(not H.diagnostic(buf, 'KL008'), 'KL008 ignored through the settings, got ' .. table.concat(H.codes(buf), ','))
end)

H.test('KL005 on tl.tanh, KL004 on a runtime arange bound, KL001 on a Python time loop', function()
  local b1 = H.open(H.copy('examples/tanh_activation/candidate_tl_tanh.py', dir))
  H.wait_code(b1, 'KL005')
  local b2 = H.open(H.copy('examples/softmax_arange/candidate_arange_runtime.py', dir))
  local d4 = H.wait_code(b2, 'KL004')
  H.contains(d4.message, 'tl.arange')
  local b3 = H.open(H.copy('examples/gru/gru_python_loop.py', dir))
  local d1 = H.wait_code(b3, 'KL001')
  H.contains(d1.message, 'launches per step')
  H.eq('kernel-lsp', d1.source, 'diagnostic source')
end)

H.test('the KL005 quick fix rewrites tl.tanh to the sigmoid identity and the diagnostic goes', function()
  local buf = H.open(H.copy('examples/tanh_activation/candidate_tl_tanh.py', dir, 'quickfix.py'))
  local d = H.wait_code(buf, 'KL005')
  vim.api.nvim_win_set_cursor(0, { d.lnum + 1, d.col })
  local titles = {}
  vim.lsp.buf.code_action({
    context = { only = { 'quickfix' } },
    filter = function(a)
      titles[#titles + 1] = a.title
      return a.kind == 'quickfix'
    end,
    apply = true,
  })
  H.wait(10000, function() return H.text(buf):find('tl.sigmoid', 1, true) end, 'the fix in the buffer')
  local line = vim.api.nvim_buf_get_lines(buf, d.lnum, d.lnum + 1, false)[1]
  H.ok(not line:find('tl.tanh', 1, true), 'tl.tanh still on the line: ' .. line)
  H.contains(line, 'tl.sigmoid(2')
  H.wait(10000, function() return not H.diagnostic(buf, 'KL005') end, 'KL005 to go away')
  H.ok(vim.bo[buf].modified, 'buffer modified')
  -- The other actions on the line were offered too.
  H.ok(vim.iter(titles):any(function(t) return t:find('Ignore KL005', 1, true) end), 'suppression action offered: ' .. vim.inspect(titles))
end)

H.test(':KernelFixAll applies the safe fixes', function()
  local buf = H.open(H.copy('examples/tanh_activation/candidate_tl_tanh.py', dir, 'fixall.py'))
  H.wait_code(buf, 'KL005')
  vim.cmd('KernelFixAll')
  H.wait(10000, function() return H.text(buf):find('tl.sigmoid', 1, true) end, 'the fix in the buffer')
  H.wait(10000, function() return not H.diagnostic(buf, 'KL005') end, 'KL005 to go away')
  vim.cmd('KernelFixAll')
  H.wait(5000, function()
    local m = kl.ui and nil
    local msgs = require('kernel_lsp.ui').messages
    return msgs[#msgs] and msgs[#msgs].msg == 'nothing to fix'
  end, '"nothing to fix" on the second run')
end)

H.test('code lenses on kernels and ModelNew; inlay hints enabled', function()
  local buf = H.open(H.copy('examples/gru/gru_python_loop.py', dir, 'lens.py'))
  H.wait_code(buf, 'KL001')
  H.ok(vim.lsp.inlay_hint.is_enabled({ bufnr = buf }), 'inlay hints enabled')
  local lenses = H.wait(20000, function()
    local l = H.lenses(buf)
    return #l > 0 and l
  end, 'code lenses')
  local model = H.line_of(buf, 'class ModelNew')
  local titles = {}
  local on_model
  for _, l in ipairs(lenses) do
    titles[#titles + 1] = l.title
    if l.line == model then
      on_model = l.title
    end
  end
  H.eq('▶ Benchmark vs reference', on_model, 'lens on ModelNew (all: ' .. vim.inspect(titles) .. ')')
  H.ok(vim.iter(titles):any(function(t) return t:find('not persistent', 1, true) end), 'a "not persistent" kernel lens: ' .. vim.inspect(titles))
end)

H.test(':KernelExplain KL001 shows the rule documentation in a float', function()
  vim.cmd('KernelExplain KL001')
  local text = H.wait(10000, function()
    for _, t in ipairs(H.floats()) do
      if t:find('KL001', 1, true) then
        return t
      end
    end
  end, 'a float with KL001')
  H.contains(text, 'python-time-loop-launch')
  vim.cmd('fclose!')
end)

H.test(':KernelExplain without a code explains the diagnostic under the cursor', function()
  local buf = H.open(H.copy('examples/tanh_activation/candidate_tl_tanh.py', dir, 'explain.py'))
  local d = H.wait_code(buf, 'KL005')
  vim.api.nvim_win_set_cursor(0, { d.lnum + 1, 0 })
  vim.cmd('KernelExplain')
  local text = H.wait(10000, function()
    for _, t in ipairs(H.floats()) do
      if t:find('KL005', 1, true) then
        return t
      end
    end
  end, 'a float with KL005')
  H.contains(text, 'unknown-triton-function')
  vim.cmd('fclose!')
end)

H.test(':KernelHistory opens a markdown table in a split', function()
  local buf = H.open(H.copy('examples/tanh_activation/candidate_fixed.py', dir))
  H.client(buf)
  local wins = #vim.api.nvim_list_wins()
  vim.cmd('KernelHistory')
  local hbuf = H.wait(10000, function()
    local b = vim.fn.bufnr('kernel-lsp://history')
    return b ~= -1 and b
  end, 'the history split')
  H.eq(wins + 1, #vim.api.nvim_list_wins(), 'windows')
  H.eq('markdown', vim.bo[hbuf].filetype, 'filetype')
  H.contains(H.text(hbuf), '| time | stage | score | latency | problem |')
  vim.cmd('close')
  vim.cmd('KernelTimeline')
  local tbuf = H.wait(10000, function()
    local b = vim.fn.bufnr('kernel-lsp://timeline')
    return b ~= -1 and b
  end, 'the timeline split')
  H.contains(H.text(tbuf), '| time | stage |')
  vim.cmd('close')
end)

H.test('a rewrite edit is previewed as a diff and applied only when confirmed', function()
  local buf = H.open(H.copy('examples/tanh_activation/candidate_tl_tanh.py', dir, 'preview.py'))
  local client = H.client(buf)
  local line = H.line_of(buf, '    out = tl.tanh(acc)')
  local edit = {
    changes = {
      [vim.uri_from_bufnr(buf)] = {
        { range = { start = { line = line, character = 10 }, ['end'] = { line = line, character = 22 } },
          newText = '2 * tl.sigmoid(2 * acc) - 1' },
      },
    },
  }
  local shown
  kl.config.confirm = function()
    shown = H.text(vim.fn.bufnr('kernel-lsp://rewrite-preview'))
    return false
  end
  local win = vim.api.nvim_get_current_win()
  H.eq(false, kl.preview_edit(edit, client, { title = 'Make persistent (1.80x)' }), 'declined')
  H.contains(shown, '-    out = tl.tanh(acc)')
  H.contains(shown, '+    out = 2 * tl.sigmoid(2 * acc) - 1')
  H.contains(shown, '# Make persistent (1.80x)')
  H.eq(-1, vim.fn.bufnr('kernel-lsp://rewrite-preview'), 'preview closed')
  H.eq(win, vim.api.nvim_get_current_win(), 'focus back')
  H.ok(H.text(buf):find('tl.tanh(acc)', 1, true), 'unchanged after declining')

  -- The server asking through workspace/applyEdit with a change annotation that needs confirmation.
  kl.config.confirm = function() return true end
  local annotated = {
    changeAnnotations = { llm = { label = 'LLM rewrite', needsConfirmation = true } },
    documentChanges = { {
      textDocument = { uri = vim.uri_from_bufnr(buf) }, -- version null: decoded as nil
      edits = { vim.tbl_extend('force', edit.changes[vim.uri_from_bufnr(buf)][1], { annotationId = 'llm' }) },
    } },
  }
  local reply = kl.on_apply_edit(nil, { label = 'persistent', edit = annotated }, { client_id = client.id })
  H.eq(true, reply.applied, 'applied (' .. tostring(reply.failureReason) .. ')')
  H.contains(H.text(buf), 'out = 2 * tl.sigmoid(2 * acc) - 1')
end)

H.test('a code action edit that needs confirmation goes through the preview too', function()
  local buf = H.open(H.copy('examples/tanh_activation/candidate_tl_tanh.py', dir, 'annotated.py'))
  H.client(buf)
  local line = H.line_of(buf, '    out = tl.tanh(acc)')
  local uri = vim.uri_from_bufnr(buf)
  local function edit()
    return {
      changeAnnotations = { r = { label = 'Make persistent: 1.80x faster', needsConfirmation = true } },
      documentChanges = { {
        textDocument = { uri = uri },
        edits = { { range = { start = { line = line, character = 10 }, ['end'] = { line = line, character = 22 } },
          newText = 'tl.sigmoid(acc)', annotationId = 'r' } },
      } },
    }
  end
  local asked
  kl.config.confirm = function(m) asked = m return false end
  -- What vim.lsp.buf.code_action does with a (resolved) action's edit.
  vim.lsp.util.apply_workspace_edit(edit(), 'utf-16')
  H.contains(asked, 'Make persistent: 1.80x faster')
  H.ok(H.text(buf):find('tl.tanh(acc)', 1, true), 'unchanged after declining')
  kl.config.confirm = function() return true end
  vim.lsp.util.apply_workspace_edit(edit(), 'utf-16')
  H.contains(H.text(buf), 'out = tl.sigmoid(acc)')
  -- Edits without such an annotation apply directly, as before.
  asked = nil
  kl.config.confirm = function(m) asked = m return false end
  vim.lsp.util.apply_workspace_edit({ changes = { [uri] = { { range = { start = { line = 0, character = 0 }, ['end'] = { line = 0, character = 0 } }, newText = '# plain\n' } } } }, 'utf-16')
  H.eq(nil, asked, 'no confirmation for a plain edit')
  H.eq('# plain', vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1], 'plain edit applied')
end)
