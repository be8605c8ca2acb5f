-- The plugin added to the runtimepath after startup: `nvim -u NONE` (which
-- sources no plugin/ file at all), then `:set rtp+=editors/nvim`. The user
-- commands must exist all the same once the plugin is used: after
-- `vim.lsp.enable('kernel_lsp')`, after opening a Python file with it
-- enabled, or after `require('kernel_lsp')`. Each case runs in its own
-- `nvim --headless -u NONE`, started from this test.
local H = ... -- tests/helpers.lua, passed by its run()

local plugin = H.repo .. '/editors/nvim'
local dir = H.tmpdir()
local kernel = H.copy('examples/tanh_activation/candidate_tl_tanh.py', dir)

local COMMANDS = {
  'KernelBench', 'KernelBenchCancel', 'KernelPersistent', 'KernelHistory',
  'KernelTimeline', 'KernelExplain', 'KernelFixAll',
}

-- Runs in the child nvim: `before` (Lua source) at startup, `after` once
-- startup is over (VimEnter done, as when a user types the commands); writes
-- what it saw as JSON to $KL_OUT and quits.
local CHILD = [[
local out = {}
local function commands()
  local r = {}
  for _, name in ipairs(vim.json.decode(vim.env.KL_COMMANDS)) do
    r[name] = vim.fn.exists(':' .. name) == 2
  end
  return r
end
local function finish()
  vim.fn.writefile({ vim.json.encode(out) }, vim.env.KL_OUT)
  for _, c in ipairs(vim.lsp.get_clients()) do
    c:stop(true)
  end
  vim.cmd('qall!')
end
out.at_start = commands()
out.plugin_sourced_at_start = vim.g.loaded_kernel_lsp == true
%s
vim.schedule(function()
  local ok, err = pcall(function()
    out.did_enter = vim.v.vim_did_enter
    %s
  end)
  out.error = not ok and tostring(err) or nil
  finish()
end)
]]

local function child(name, before, after)
  local script = dir .. '/' .. name .. '.lua'
  local result = dir .. '/' .. name .. '.json'
  vim.fn.writefile(vim.split(string.format(CHILD, before, after), '\n'), script)
  local proc = vim.system({ vim.v.progpath, '--headless', '-u', 'NONE', '-i', 'NONE', '-n', '-c', 'luafile ' .. script }, {
    env = {
      KL_OUT = result,
      KL_COMMANDS = vim.json.encode(COMMANDS),
      KL_PLUGIN = plugin,
      KL_KERNEL = kernel,
    },
    text = true,
    timeout = 60000,
  }):wait()
  H.ok(vim.fn.filereadable(result) == 1,
    string.format('%s: the child nvim wrote no result (exit %s): %s%s', name, tostring(proc.code), proc.stdout or '', proc.stderr or ''))
  local r = vim.json.decode(table.concat(vim.fn.readfile(result), '\n'))
  H.eq(nil, r.error, name .. ': error in the child')
  H.eq(false, r.plugin_sourced_at_start, name .. ': plugin/ not sourced at startup (-u NONE)')
  for _, c in ipairs(COMMANDS) do
    H.eq(false, r.at_start[c], name .. ': no :' .. c .. ' before the plugin is on the runtimepath')
  end
  return r
end

local function all_defined(r, field, what)
  for _, c in ipairs(COMMANDS) do
    H.eq(true, r[field][c], what .. ': :' .. c .. ' exists')
  end
end

H.test('-u NONE, rtp added after startup: vim.lsp.enable defines the commands', function()
  local r = child('enable', '', [[
    vim.opt.runtimepath:append(vim.env.KL_PLUGIN)
    out.before_enable = commands()
    vim.lsp.enable('kernel_lsp')
    out.after = commands()
  ]])
  H.eq(1, r.did_enter, 'ran after startup')
  H.eq(false, r.before_enable.KernelBench, 'the runtimepath alone sources nothing')
  all_defined(r, 'after', "after vim.lsp.enable('kernel_lsp')")
end)

H.test('-u NONE, rtp and enable at startup: opening a Triton file defines the commands and they work', function()
  local r = child('open', [[
    vim.opt.runtimepath:append(vim.env.KL_PLUGIN)
    vim.cmd('filetype on')
    vim.lsp.enable('kernel_lsp')
    out.after_enable = commands()
  ]], [[
    vim.cmd('edit ' .. vim.fn.fnameescape(vim.env.KL_KERNEL))
    out.after = commands()
    local buf = vim.api.nvim_get_current_buf()
    out.attached = vim.wait(20000, function()
      local c = vim.lsp.get_clients({ bufnr = buf, name = 'kernel_lsp' })[1]
      return c ~= nil and c.initialized
    end, 50)
    -- The LspAttach autocommand defined with the commands ran: inlay hints on.
    out.inlay_hints = vim.wait(5000, function()
      return vim.lsp.inlay_hint.is_enabled({ bufnr = buf })
    end, 50)
    -- A command does its work: the rule documentation in a float.
    vim.cmd('KernelExplain KL005')
    out.explained = vim.wait(10000, function()
      for _, w in ipairs(vim.api.nvim_list_wins()) do
        if vim.api.nvim_win_get_config(w).relative ~= '' then
          local text = table.concat(vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(w), 0, -1, false), '\n')
          if text:find('KL005', 1, true) then
            return true
          end
        end
      end
      return false
    end, 50)
  ]])
  all_defined(r, 'after', 'after opening a Triton file')
  H.eq(true, r.attached, 'kernel_lsp attached')
  H.eq(true, r.inlay_hints, 'inlay hints enabled by the LspAttach autocommand')
  H.eq(true, r.explained, ':KernelExplain KL005 showed the rule doc')
end)

H.test("-u NONE, rtp added after startup: require('kernel_lsp') defines the commands, once", function()
  local r = child('require', '', [[
    vim.opt.runtimepath:append(vim.env.KL_PLUGIN)
    require('kernel_lsp').setup({ enable = false })
    out.after = commands()
    -- Defining again (plugin/ sourced later, the lsp config re-read) is harmless.
    vim.cmd('runtime plugin/kernel_lsp.lua')
    pcall(vim.cmd, 'runtime lsp/kernel_lsp.lua')
    out.again = commands()
    out.autocmds = #vim.api.nvim_get_autocmds({ group = 'kernel_lsp', event = 'LspAttach' })
  ]])
  all_defined(r, 'after', "after require('kernel_lsp')")
  all_defined(r, 'again', 'after defining twice')
  H.eq(1, r.autocmds, 'one LspAttach autocommand')
end)
