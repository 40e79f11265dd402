<?php
/**
 * Plugin Name: Shortcode Demo
 * Description: Fixture for Codebox recipes: a [codebox_greet] shortcode and a PHPUnit suite.
 * Version: 1.0.0
 */

function codebox_demo_greet( $name ) {
	$name = sanitize_text_field( $name );
	return 'Hello, ' . ( '' === $name ? 'world' : $name ) . '!';
}

function codebox_demo_shortcode( $atts ) {
	$atts = shortcode_atts( array( 'name' => '' ), $atts, 'codebox_greet' );
	return '<p class="codebox-greet">' . esc_html( codebox_demo_greet( $atts['name'] ) ) . '</p>';
}
add_shortcode( 'codebox_greet', 'codebox_demo_shortcode' );
