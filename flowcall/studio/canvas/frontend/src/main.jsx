// The flow canvas: React Flow inside a Streamlit component iframe.
//
// Python sends the whole graph (nodes, edges, what may be edited) on every render; this side
// draws it, lets a person move, select, connect and delete, and sends each of those back as
// one event {seq, kind, ...}. Python owns the flow: it applies the event to its draft and
// renders again. Every text is put in the page as text (React escapes it), never as HTML or
// Markdown, because tool names and descriptions come from servers nobody vetted.
import React, { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { createRoot } from "react-dom/client";
import {
  Background, Controls, Handle, MiniMap, Position, ReactFlow, ReactFlowProvider,
  applyNodeChanges, getNodesBounds, getViewportForBounds, useReactFlow,
} from "@xyflow/react";
import { toPng } from "html-to-image";
import "@xyflow/react/dist/style.css";
import "./canvas.css";

// ---------------------------------------------------------------- the Streamlit protocol
const post = (type, extra) =>
  window.parent.postMessage({ isStreamlitMessage: true, type, ...extra }, "*");
let seq = 0;
const send = (kind, body) =>
  post("streamlit:setComponentValue", { value: { seq: `${Date.now()}-${++seq}`, kind, ...body }, dataType: "json" });

// ---------------------------------------------------------------- nodes
function FlowNode({ data, selected }) {
  const cls = ["fc-node", `fc-${data.kind}`, data.group ? `fc-group-${data.group}` : "",
    data.status ? `fc-status-${data.status}` : "", selected ? "fc-selected" : ""].join(" ");
  const main = data.kind !== "tool";
  return (
    <div className={cls} data-testid={`node-${data.kind}`} title={data.tooltip || ""}>
      {data.kind !== "question" && (main
        ? <Handle type="target" position={Position.Top} id="in" />
        : <Handle type="target" position={Position.Left} id="in" />)}
      <div className="fc-head">
        <span className="fc-kind">{data.label}</span>
        {data.badge ? <span className="fc-badge">{data.badge}</span> : null}
      </div>
      <div className="fc-title">{data.title}</div>
      {data.subtitle ? <div className="fc-sub">{data.subtitle}</div> : null}
      {(data.lines || []).map((line, i) => <div className="fc-line" key={i}>{line}</div>)}
      {data.kind !== "answer" && main && <Handle type="source" position={Position.Bottom} id="out" />}
      {data.kind === "decision" && <Handle type="source" position={Position.Right} id="tools" />}
    </div>
  );
}
const nodeTypes = { flowcall: FlowNode };

const toFlowNodes = (nodes) =>
  nodes.map((n) => ({
    id: n.id, type: "flowcall", position: { x: n.x, y: n.y }, data: n,
    deletable: !!n.deletable, selected: !!n.selected, ariaLabel: `${n.label}: ${n.title}`,
  }));
const toFlowEdges = (edges) =>
  edges.map((e) => ({
    id: e.id, source: e.source, target: e.target, sourceHandle: e.source_handle || "out",
    targetHandle: "in", deletable: !!e.deletable, animated: !!e.animated, label: e.label || undefined,
    className: e.status ? `fc-edge-${e.status}` : undefined,
  }));

// ---------------------------------------------------------------- the canvas
function Canvas({ args }) {
  const [nodes, setNodes] = useState(() => toFlowNodes(args.nodes));
  const graphKey = useMemo(() => JSON.stringify([args.nodes, args.edges]), [args.nodes, args.edges]);
  const edges = useMemo(() => toFlowEdges(args.edges), [graphKey]);
  const flow = useReactFlow();
  const wrapper = useRef(null);

  useEffect(() => { setNodes(toFlowNodes(args.nodes)); }, [graphKey]);
  useEffect(() => { const t = setTimeout(() => flow.fitView({ padding: 0.15 }), 50); return () => clearTimeout(t); },
    [args.fit_token]);

  const editable = !!args.editable;
  const onNodesChange = useCallback((changes) => setNodes((ns) => applyNodeChanges(
    changes.filter((c) => c.type !== "remove"), ns)), []);
  const onNodeClick = useCallback((_, node) => send("select", { id: node.id }), []);
  const onPaneClick = useCallback(() => { if (args.selected) send("select", { id: null }); }, [args.selected]);
  const onNodeDragStop = useCallback((_, __, moved) => {
    const positions = {};
    for (const n of moved) positions[n.id] = { x: Math.round(n.position.x), y: Math.round(n.position.y) };
    send("move", { positions });
  }, []);
  const onNodesDelete = useCallback((gone) => send("delete", { ids: gone.map((n) => n.id) }), []);
  const onEdgesDelete = useCallback((gone) => send("disconnect", { ids: gone.map((e) => e.id) }), []);
  const onConnect = useCallback((c) => send("connect", { source: c.source, target: c.target }), []);

  const exportPng = useCallback(() => {
    const view = wrapper.current.querySelector(".react-flow__viewport");
    const bounds = getNodesBounds(flow.getNodes());
    const width = Math.ceil(bounds.width + 80), height = Math.ceil(bounds.height + 80);
    const vp = getViewportForBounds(bounds, width, height, 0.5, 2, 40);
    toPng(view, { backgroundColor: "#ffffff", width, height,
      style: { width: `${width}px`, height: `${height}px`,
        transform: `translate(${vp.x}px, ${vp.y}px) scale(${vp.zoom})` } })
      .then((png) => send("export", { png }));
  }, [flow]);

  return (
    <div ref={wrapper} style={{ height: args.height, width: "100%" }} className="fc-wrapper">
      <ReactFlow
        nodes={nodes} edges={edges} nodeTypes={nodeTypes}
        onNodesChange={onNodesChange} onNodeClick={onNodeClick} onPaneClick={onPaneClick}
        onNodeDragStop={onNodeDragStop}
        onNodesDelete={editable ? onNodesDelete : undefined}
        onEdgesDelete={editable ? onEdgesDelete : undefined}
        onConnect={editable ? onConnect : undefined}
        nodesConnectable={editable} edgesFocusable={editable}
        deleteKeyCode={editable ? ["Delete", "Backspace"] : null}
        fitView fitViewOptions={{ padding: 0.15 }} minZoom={0.3} maxZoom={1.75}
        proOptions={{ hideAttribution: true }}
      >
        <Background gap={20} size={1} />
        <Controls showInteractive={false} />
        {args.minimap ? <MiniMap pannable zoomable /> : null}
      </ReactFlow>
      {args.export ? <button className="fc-export" onClick={exportPng} type="button">PNG</button> : null}
      {args.legend ? (
        <div className="fc-legend" aria-hidden="true">
          <span className="fc-dot fc-group-plugin" />Python plugin
          <span className="fc-dot fc-group-mcp" />MCP server
          <span className="fc-dot fc-group-http" />HTTP / OpenAPI
          <span className="fc-dot fc-group-flow" />sub-flow
        </div>) : null}
    </div>
  );
}

// ---------------------------------------------------------------- mounting
function App() {
  const [args, setArgs] = useState(null);
  useEffect(() => {
    const onMessage = (event) => {
      if (event.data && event.data.type === "streamlit:render") setArgs(event.data.args);
    };
    window.addEventListener("message", onMessage);
    post("streamlit:componentReady", { apiVersion: 1 });
    return () => window.removeEventListener("message", onMessage);
  }, []);
  useEffect(() => { if (args) post("streamlit:setFrameHeight", { height: args.height + 4 }); }, [args && args.height]);
  if (!args) return null;
  return <ReactFlowProvider><Canvas args={args} /></ReactFlowProvider>;
}

createRoot(document.getElementById("root")).render(<App />);
